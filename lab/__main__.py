"""Allow ``python -m lab``."""

from lab.cli import main

raise SystemExit(main())
