"""Where the lab's own files live: the variants, the image recipes, the in-guest runner and
the example study files.

Run from a checkout (or an editable install of one) they are the checkout's ``domains/``,
``images/``, ``guest/`` and ``studies/``, and the default store is in its ``results/``. Installed
(``pip install .``) they are shipped inside the package, in ``lab/shipped/``, and the
default store is ``$XDG_DATA_HOME/lab`` (``~/.local/share/lab``).
"""

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
CHECKOUT = PACKAGE_DIR.parent
FROM_CHECKOUT = (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "domains").is_dir()
SHIPPED = CHECKOUT if FROM_CHECKOUT else PACKAGE_DIR / "shipped"

DOMAINS_DIR = SHIPPED / "domains"
GUEST_DIR = SHIPPED / "guest"
IMAGES_DIR = SHIPPED / "images"
STUDIES_DIR = SHIPPED / "studies"  # example study files
PARSERS_FILE = PACKAGE_DIR / "parsers" / "tools.py"
# expanduser, not Path.home(): with no $HOME and no passwd entry that raised at import, a
# traceback before any command; "~" left as it is makes a store path that says why.
_DATA_HOME = Path(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"))
RESULTS_DIR = CHECKOUT / "results" if FROM_CHECKOUT else _DATA_HOME / "lab"
