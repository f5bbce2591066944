"""guest-thp-never: as thp, with transparent huge pages off in the guest's own kernel."""

from lab.guests.variant import GuestTHPMode

VARIANT = GuestTHPMode(
    "guest-thp-never",
    "as thp, and the guest kernel's command line says transparent_hugepage=never",
    mode="never",
)
