"""A bit-exact functional model of the Ethos-U55: the integer arithmetic (arith), feature maps in
memory (featuremap), weight and scale streams (weights), and the operations of a decoded
command stream run on them (execute)."""
