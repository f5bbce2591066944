"""The entry point of the runner's zipapp: what ``python3 runner-HASH.pyz`` runs in a guest.

The runner itself is the standard-library package ``lab/inguest``; the controller packs it,
``lab/parsers/tools.py`` and this file into one zipapp (``lab/run/shipping.py``).
"""

import sys

from lab.inguest.cli import main

sys.exit(main())
