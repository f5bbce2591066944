"""The application: what a user asks for, as plans and actions the commands call.

A study file (``study``) is the whole design of a study. May import: every layer below
(``lab.run``, ``lab.guests``, ``lab.report``, ``lab.store`` and the rest); never
``lab.commands``.
"""
