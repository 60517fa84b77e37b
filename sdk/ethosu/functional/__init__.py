"""Bit-exact functional models of the Ethos-U55 and the Ethos-U85: the integer arithmetic
(arith), feature maps in memory (featuremap), weight and scale streams (weights; the U85's:
weights_u85), and the operations of a decoded command stream run on them (execute; the U85's:
execute_u85)."""
