"""The `sdk` command line: one module per subcommand (arguments and printing only; the work is
the library's), `main` the one place errors become exit codes."""
