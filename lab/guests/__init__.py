"""The twin guests: from a request to a verified pair.

Variants (``variant``, loaded from ``domains/`` by ``variants``), the plan (``plan``:
variants, topology, accelerator, ``cpuplan``), the domain specs (``twins``), their files
(``files``, ``storagepool``), seed and keys, bring-up and teardown (``bringup``, per host
through ``sites``), readiness, verification, what is up (``labstate``), SSH into them
(``ssh``), and the twins' fairness (``diff``, ``fairness``). May import: ``lab.images``,
``lab.host``, ``lab.domainxml``, ``lab.core``.
"""
