"""One module per subcommand: `register(subparsers)` and `run(args) -> int`."""
