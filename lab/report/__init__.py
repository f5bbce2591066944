"""How results are shown: tables (``tables``), text formats (``formats``), plots (``plots``;
a sweep's in ``sweepplot``, the memory backing's in ``backingplot``), a sweep's table
(``sweeps``) and the self-contained HTML study report (``html``: its pieces in ``markup``, its
metadata in ``metadata``, its figures drawn in parallel by ``drawing``)."""
