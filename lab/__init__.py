"""lab: a reproducible A/B performance laboratory for KVM guests."""

__version__ = "0.1.0"
