"""stream: memory bandwidth of the four STREAM kernels, by the lab's own C program.

``stream.c`` beside this file is compiled in the guest with the image's gcc and OpenMP
(Debian's gcc-12 depends on libgcc-12-dev, which brings omp.h and libgomp1), in the untimed
setup of each runner start; the binary's name carries the hash of the source and flags, so a
later start finds it built and a changed program is built anew. Each iteration runs it once:
``repetitions`` passes over Copy, Scale, Add and Triad on three arrays of ``array_size``
doubles, reported in MB/s.

The default size is for the lab's default guests (1 vCPU and 1 GiB under TCG, where the
kernels' floating point is emulated): 4 M doubles, 32 MB an array, so Copy and Scale move 64
MB and Add and Triad 96 MB a pass, two to three times a 32 MiB last-level cache, and an
iteration takes seconds. STREAM's own rule asks for each array to be four times the
last-level cache: with KVM, raise ``array_size`` after ``lscpu`` in the guest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from lab.core.errors import UsageError
from lab.inguest.spec import Spec
from lab.run.workload import GuestInfo, Metric, Param, Workload

SOURCE = Path(__file__).with_name("stream.c")
COMPILE = ("gcc", "-O2", "-fopenmp")
ARRAYS = 3
DOUBLE_BYTES = 8
BYTES_PER_PASS = 80  # per element: Copy and Scale move 16 bytes, Add and Triad 24
SLOW_BYTES_PER_S = 100e6  # a slow TCG guest's rate; the timeout allows ten times that long
MEMORY_SHARE = 0.75  # of the guest's memory the arrays may take; the rest is the system's

# Build once per binary name; "$1" is the binary, "$2" the source (an argument, so no shell
# reads it). Compiled under a temporary name and renamed: an interrupted build is redone.
BUILD = """set -e
[ -x "$1" ] && exit 0
printf '%s' "$2" > "$1.c"
{compile} -o "$1.part" "$1.c"
mv -f "$1.part" "$1"
"""


def program_name(source: str) -> str:
    """The binary's name in the runner's folder: its source and flags decide it."""
    digest = hashlib.sha256("\0".join([*COMPILE, source]).encode()).hexdigest()[:12]
    return f"lab-stream-{digest}"


def setup_argv(binary: str, source: str) -> list[str]:
    """Untimed, once per runner start: compile ``source`` into ``binary`` unless it is there."""
    script = BUILD.format(compile=" ".join(COMPILE))
    return ["sh", "-c", script, "lab-stream-build", binary, source]


class Stream(Workload):
    name = "stream"
    description = "STREAM's Copy, Scale, Add and Triad kernels (the lab's own C program): MB/s"
    parameters = MappingProxyType(
        {
            "array_size": Param(
                4_000_000,
                "doubles in each of the three arrays, at least 100000 (STREAM asks for each"
                " array to be 4 times the last-level cache)",
                int,
                r"[1-9][0-9]{5,8}",
            ),
            "threads": Param(
                None, "OpenMP threads (default: the guest's vCPUs)", int, r"[1-9][0-9]{0,3}"
            ),
            "repetitions": Param(
                3,
                "passes over the four kernels per iteration; a kernel's rate is its best after"
                " the first pass, which warms up (STREAM's figure)",
                int,
                r"[1-9][0-9]{0,3}",
            ),
        }
    )
    metrics = (
        Metric("copy_mb_s", "MB/s", "higher"),
        Metric("scale_mb_s", "MB/s", "higher"),
        Metric("add_mb_s", "MB/s", "higher"),
        Metric("triad_mb_s", "MB/s", "higher"),
    )

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        size, repetitions = int(p["array_size"] or 0), int(p["repetitions"] or 0)
        need = ARRAYS * DOUBLE_BYTES * size
        if guest.memory_kib and need > MEMORY_SHARE * guest.memory_kib * 1024:
            raise UsageError(
                f"stream: three arrays of {size} doubles take {need / 2**20:.0f} MiB, more than"
                f" {MEMORY_SHARE:.0%} of the guest's {guest.memory_kib // 1024} MiB",
                hint="Give a smaller array_size, or the guests more memory",
            )
        source = SOURCE.read_text()
        binary = f"{guest.work_dir}/{program_name(source)}"
        argv = [binary, str(size), str(p["threads"] or guest.vcpus), str(repetitions)]
        # initialisation and the final check each cost about one pass
        seconds = 10 * BYTES_PER_PASS * size * (repetitions + 2) / SLOW_BYTES_PER_S
        return self._spec(
            guest,
            argv,
            parser="lab-stream",
            setup_argv=setup_argv(binary, source),
            timeout_s=60 + seconds,
        )


WORKLOAD = Stream()
