"""How results are shown: tables (``tables``), text formats (``formats``), plots (``plots``),
a sweep's table (``sweeps``) and the self-contained HTML study report (``html``)."""
