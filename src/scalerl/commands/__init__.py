"""One module per ``scalerl`` subcommand: ``add_arguments(parser)`` and ``run(args)``.

Keep them thin: parse, call the library, print. Import heavy packages (torch) inside
``run`` or in the library modules they call, never at the top of a forecast command.
"""
