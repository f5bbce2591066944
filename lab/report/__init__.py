"""How results are shown: tables (``tables``), text formats (``formats``), plots (``plots``)
and the self-contained HTML study report (``html``)."""
