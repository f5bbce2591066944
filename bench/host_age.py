"""`lab host age` on this host, checked from /proc by code of its own (issue 42).

For each level (0.5, 0.8 and 1 by default): the order-9 unusable free space index read from
/proc/buddyinfo before, `lab host age --level L` run as the CLI, the index it reached, the
time it took, the memory its fragmenter holds (its VmRSS), then `lab host age --undo` and the
index once the per-CPU page lists have drained, and the 1 GiB huge page pool before and
after. Passes when the index reached is within 0.08 of the level, the index after undo is
back within 0.05 of (or below) the one before, and the 1 GiB pool is unchanged.

Needs root. It uses a state directory of its own (a temporary lab.toml), and always undoes,
on error and Ctrl-C too. It refuses to run while QEMU processes run (the lead's guests need
the machine undisturbed) unless --with-guests is given (--wait-quiet S waits for them to
end), and stops and undoes at once if one starts meanwhile.

    python bench/host_age.py [--levels 0.5,0.8,1] [--keep-free 2G] [--with-guests]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POOL_1G = Path("/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages")
TOLERANCE = 0.08
BACK_WITHIN = 0.05
SETTLE_SECONDS = 150


def index_now() -> tuple[float, float]:
    """(Fu(9), free GiB) over every zone, from /proc/buddyinfo, by regular expressions."""
    free = usable = 0
    for counts in re.findall(r"zone\s+\w+((?:\s+\d+)+)", Path("/proc/buddyinfo").read_text()):
        for order, blocks in enumerate(int(c) for c in counts.split()):
            free += blocks << order
            usable += (blocks << order) if order >= 9 else 0
    return (1 - usable / free if free else 0.0), free * 4096 / 2**30


def pcp_pages() -> tuple[int, int]:
    text = Path("/proc/zoneinfo").read_text()
    count = sum(int(n) for n in re.findall(r"^\s+count:\s+(\d+)$", text, re.MULTILINE))
    floor = sum(int(n) for n in re.findall(r"^\s+high_min:\s+(\d+)$", text, re.MULTILINE))
    return count, floor


def settled_index() -> tuple[float, float, float]:
    """The index once pages freed lately have left the per-CPU lists; (index, free GiB, s)."""
    start = time.monotonic()
    while time.monotonic() - start < SETTLE_SECONDS:
        count, floor = pcp_pages()
        if count <= floor + 16384:
            break
        time.sleep(1)
    return (*index_now(), time.monotonic() - start)


def pool_1g() -> int | None:
    return int(POOL_1G.read_text()) if POOL_1G.exists() else None


def qemu_running() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if "qemu" in (entry / "comm").read_text():
                    found.append(entry.name)
            except OSError:
                pass
    return found


def watch_for_guests() -> None:
    while not qemu_running():
        time.sleep(0.5)
    print("a QEMU started: stopping and undoing", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGINT)


def holder_rss_gib(state_dir: Path) -> tuple[int | None, float]:
    text = (state_dir / "host-aging.json").read_text()
    pid = int(re.search(r'"pid": (\d+)', text)[1])  # type: ignore[index]
    status = Path(f"/proc/{pid}/status").read_text()
    return pid, int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) / 2**20  # type: ignore[index]


def lab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab", "host", "age", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def one_level(
    env: dict[str, str], state_dir: Path, level: float, keep_free: str, compact_first: bool
) -> bool:
    if compact_first:  # the kernel's own compaction, so the level is reached from below
        Path("/proc/sys/vm/compact_memory").write_text("1\n")
    before, free_before, _ = settled_index()
    pool_before = pool_1g()
    print(f"\nlevel {level}: index before {before:.3f} of {free_before:.2f} GiB free", flush=True)
    t0 = time.monotonic()
    aged = lab(env, "--level", str(level), "--keep-free", keep_free)
    took = time.monotonic() - t0
    print(aged.stderr.strip() or aged.stdout.strip())
    if aged.returncode != 0:
        print(f"  lab host age failed (exit {aged.returncode})")
        return False
    reached, free_aged = index_now()
    if not (state_dir / "host-aging.json").exists():  # at or above the level already
        print(f"  index reached      {reached:.3f}: the host was there already; nothing held"
              " (--compact-first starts from a compacted host)")  # fmt: skip
        return before >= level
    pid, rss = holder_rss_gib(state_dir)
    time.sleep(5)  # still held a little later?
    later, _ = index_now()
    t1 = time.monotonic()
    undone = lab(env, "--undo")
    print(undone.stderr.strip())
    after, free_after, settle = settled_index()
    undo_s = time.monotonic() - t1
    pool_after = pool_1g()
    ok_level = abs(reached - level) <= TOLERANCE
    ok_back = after <= before + BACK_WITHIN
    ok_pool = pool_before == pool_after
    print(
        f"  index reached      {reached:.3f} (level {level} ± {TOLERANCE}: "
        f"{'ok' if ok_level else 'MISSED'}); 5 s later {later:.3f}; {free_aged:.2f} GiB free\n"
        f"  time taken         {took:.1f} s (lab host age, as the CLI)\n"
        f"  memory held        {rss:.2f} GiB (VmRSS of fragmenter pid {pid})\n"
        f"  index after undo   {after:.3f} (before {before:.3f}: "
        f"{'back' if ok_back else 'NOT back'}); {free_after:.2f} GiB free;"
        f" undo + drain {undo_s:.1f} s (drain wait {settle:.1f} s)\n"
        f"  1 GiB pool         {pool_before} before, {pool_after} after"
        f" ({'unchanged' if ok_pool else 'CHANGED'})",
        flush=True,
    )
    return ok_level and ok_back and ok_pool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="0.5,0.8,1")
    parser.add_argument("--keep-free", default="2G", help="for the guests (lab host age's)")
    parser.add_argument("--with-guests", action="store_true", help="run even while QEMU runs")
    parser.add_argument(
        "--compact-first",
        action="store_true",
        help="write 1 to /proc/sys/vm/compact_memory before each level (a host the lead's"
        " runs left fragmented already starts below the level)",
    )
    parser.add_argument(
        "--wait-quiet", type=float, default=0.0, help="wait up to this many s for QEMU to end"
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (it fragments this host's memory)", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.wait_quiet
    while qemu_running() and not args.with_guests and time.monotonic() < deadline:
        time.sleep(5)
    if qemu_running() and not args.with_guests:
        pids = ", ".join(qemu_running())
        print(f"QEMU runs here (pids {pids}): not disturbing it; run again once the guests are"
              " down, or pass --with-guests", file=sys.stderr)  # fmt: skip
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # undo on kill too
    if not args.with_guests:  # a guest started meanwhile: stop at once, and undo
        threading.Thread(target=watch_for_guests, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="lab-host-age-") as tmp:
        state_dir = Path(tmp) / "state"
        (Path(tmp) / "lab.toml").write_text(f'state_dir = "{state_dir}"\n')
        env = {**os.environ, "LAB_CONFIG": str(Path(tmp) / "lab.toml")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        results = []
        try:
            for level in (float(x) for x in args.levels.split(",")):
                results.append(one_level(env, state_dir, level, args.keep_free, args.compact_first))
        except KeyboardInterrupt:
            print("interrupted: nothing more is measured", file=sys.stderr)
            return 130
        finally:
            if (state_dir / "host-aging.json").exists():
                print("undoing what is still held:", lab(env, "--undo").stderr.strip())
    print("\nall checks passed" if all(results) else "\nSOME CHECKS FAILED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
