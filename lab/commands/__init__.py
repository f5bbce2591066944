"""One module per ``lab`` sub-command; see :data:`lab.cli.COMMAND_MODULES`."""
