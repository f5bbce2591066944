"""One module per ``lab`` sub-command (see :data:`lab.cli.COMMAND_MODULES`): each parses its
options, calls the layers below and renders what they return. May import: every layer."""
