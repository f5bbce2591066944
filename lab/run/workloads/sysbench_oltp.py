"""sysbench-oltp: sysbench's OLTP scripts against MariaDB in the guest.

MariaDB is in the image but not started at boot, so a guest that runs no OLTP workload never
pays for it. The untimed setup of each runner start (:func:`setup_argv`) does the rest, and
is cheap once done: the first start of a run restarts MariaDB with the run's buffer pool
size (a configuration file, since InnoDB sizes its pool at start), drops and re-creates the
``sbtest`` database and fills ``tables`` tables of ``table_size`` rows with sysbench's own
``prepare`` (seeded, so both twins hold the same rows); then it writes a marker in the
runner's folder naming the run and its tables. A later start of the same run (under the sync
and alternate schedules every iteration is one) finds the marker and only starts MariaDB if
it is not running, as after a guest restart. Every run fills its tables anew: a run resumed
after another one finds the other's marker and prepares again. The tables are the same for
every script, and so are the marker and the setup.

Each iteration is one ``sysbench SCRIPT ... run`` of ``time`` seconds with ``threads``
clients, over the guest's Unix socket, as the lab user (MariaDB's unix_socket
authentication: no password anywhere).

The reference study (Percona Server 5.7 and sysbench 1.1 on 56 hardware threads) ran 10
tables of 80,000,000 rows, 56 to 448 client threads and one hour per run
(``--tables=10 --table-size=80000000 --threads=448 --time=3600``), with the buffer pool
sized once to hold the data set and once not; an older study ran 10 million rows read-only,
1 to 4 clients per CPU. The defaults here are for the lab's default guests (1 vCPU, 1 GiB of
memory, a 2 GB disk, TCG): 2 tables of 10,000 rows (a few MB, filled in about 9 s under TCG,
held whole by MariaDB's default 128 MiB pool), ``oltp_read_only`` (no redo log flushes, so
memory and CPU rather than the disk decide), 10 s an iteration, as many clients as vCPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from lab.core.errors import UsageError
from lab.core.units import parse_size_kib
from lab.guests.seed import GUEST_USER
from lab.inguest.spec import Spec
from lab.run.workload import GuestInfo, Metric, Param, Workload

SCRIPTS = ("oltp_read_only", "oltp_point_select", "oltp_read_write")
SOCKET = "/run/mysqld/mysqld.sock"
DATABASE = "sbtest"
CONF = "/etc/mysql/mariadb.conf.d/90-lab-sysbench-oltp.cnf"  # read after Debian's 50-server.cnf
MARKER = "sysbench-oltp.tables"  # in the runner's folder
PERCENTILE = 95
SEED = 1  # sysbench's generator per thread: the same rows in both twins
DEFAULT_POOL = "default"  # no innodb_buffer_pool_size of the lab's: MariaDB's own
MIN_POOL_KIB = 2048  # MariaDB's smallest innodb_buffer_pool_size
MEMORY_SHARE = 0.75  # of the guest's memory the pool may take; the rest is the system's

# "$1" the marker, "$2" what it must say besides the run, "$3" the configuration file, "$4" the
# pool size ("" for MariaDB's own), "$5" the SQL that makes the database; the rest is the
# prepare command. Arguments, so no shell reads them. The marker goes first and comes back
# last: whatever interrupts the setup, the next start does all of it again.
SETUP = r"""set -eu
marker=$1 want="run=${LAB_RUN_KEY:?set by the lab runner} $2" conf=$3 pool=$4 sql=$5
shift 5
if [ -r "$marker" ] && [ "$(cat "$marker")" = "$want" ]; then
    systemctl is-active --quiet mariadb || sudo systemctl start mariadb
    echo "sysbench-oltp: MariaDB runs, with the tables of this run ($want)"
    exit 0
fi
rm -f "$marker"
if [ -n "$pool" ]; then
    printf '# lab sysbench-oltp, for one run\n[mysqld]\ninnodb_buffer_pool_size = %s\n' "$pool" |
        sudo tee "$conf" >/dev/null
else
    sudo rm -f "$conf"
fi
sudo systemctl restart mariadb
sudo mariadb -e "$sql"
"$@"
printf '%s\n' "$want" > "$marker.part"
mv -f "$marker.part" "$marker"
echo "sysbench-oltp: prepared $want"
"""


def database_sql(user: str) -> str:
    """An empty ``sbtest``, and ``user`` allowed in it by its Unix account (no password)."""
    return (
        f"DROP DATABASE IF EXISTS {DATABASE}; CREATE DATABASE {DATABASE};"
        f" CREATE USER IF NOT EXISTS {user}@localhost IDENTIFIED VIA unix_socket;"
        f" GRANT ALL ON {DATABASE}.* TO {user}@localhost;"
    )


def connection(user: str) -> list[str]:
    """sysbench's options that reach the guest's MariaDB as ``user``."""
    return [
        "--db-driver=mysql", f"--mysql-socket={SOCKET}", f"--mysql-user={user}",
        f"--mysql-db={DATABASE}",
    ]  # fmt: skip


def setup_argv(
    script: str, tables: int, table_size: int, threads: int, pool: str | None,
    marker: str, user: str = GUEST_USER, conf: str = CONF,
) -> list[str]:  # fmt: skip
    """Untimed, at each runner start: MariaDB running, and this run's tables filled once."""
    shape = f"tables={tables} table_size={table_size} buffer_pool_size={pool or DEFAULT_POOL}"
    prepare = [
        "sysbench", script, *connection(user), f"--tables={tables}",
        f"--table-size={table_size}", f"--threads={threads}", f"--rand-seed={SEED}", "prepare",
    ]  # fmt: skip
    return [
        "sh", "-c", SETUP, "lab-sysbench-oltp-setup", marker, shape, conf, pool or "",
        database_sql(user), *prepare,
    ]  # fmt: skip


class SysbenchOltp(Workload):
    name = "sysbench-oltp"
    description = "sysbench's OLTP scripts against MariaDB in the guest: transactions/s"
    parameters = MappingProxyType(
        {
            "script": Param(
                "oltp_read_only",
                f"sysbench's OLTP script: {', '.join(SCRIPTS)}",
                str,
                "|".join(SCRIPTS),
            ),
            "tables": Param(
                2, "--tables: tables filled once per run (the study: 10)", int, r"[1-9][0-9]{0,2}"
            ),
            "table_size": Param(
                10_000,
                "--table-size: rows in each table (the study: 80000000)",
                int,
                r"[1-9][0-9]{0,8}",
            ),
            "time": Param(
                10, "--time: seconds each iteration runs (the study: 3600)", int, r"[1-9][0-9]{0,5}"
            ),
            "threads": Param(
                None,
                "--threads: client threads (default: the guest's vCPUs)",
                int,
                r"[1-9][0-9]{0,3}",
            ),
            "buffer_pool_size": Param(
                DEFAULT_POOL,
                "InnoDB's innodb_buffer_pool_size with K, M or G, e.g. 512M, at most 75% of the"
                f" guest's memory; {DEFAULT_POOL}: MariaDB's own (128M)",
                str,
                DEFAULT_POOL + r"|[1-9][0-9]{0,6}[KMG]",
            ),
        }
    )
    metrics = (
        Metric("transactions_per_s", "transactions/s", "higher"),
        Metric("queries_per_s", "queries/s", "higher"),
        Metric("latency_avg_ms", "ms", "lower"),
        Metric(f"latency_p{PERCENTILE}_ms", "ms", "lower"),
        Metric("errors", "count", "lower"),
    )

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        script, seconds = str(p["script"]), int(p["time"] or 0)
        tables, table_size = int(p["tables"] or 0), int(p["table_size"] or 0)
        threads = int(p["threads"] or guest.vcpus)
        pool = None if p["buffer_pool_size"] == DEFAULT_POOL else str(p["buffer_pool_size"])
        if pool is not None:
            check_pool(pool, guest)
        argv = [
            "sysbench", script, *connection(GUEST_USER), f"--tables={tables}",
            f"--table-size={table_size}", f"--time={seconds}", f"--threads={threads}",
            f"--percentile={PERCENTILE}", "run",
        ]  # fmt: skip
        marker = f"{guest.work_dir}/{MARKER}"
        return self._spec(
            guest,
            argv,
            parser="sysbench-oltp",
            setup_argv=setup_argv(script, tables, table_size, threads, pool, marker),
            # sysbench stops itself after --time; the margin covers connecting on a slow guest
            timeout_s=seconds * 1.5 + 120,
        )


def check_pool(pool: str, guest: GuestInfo) -> None:
    """Refuse a buffer pool MariaDB would not take or the guest could not hold."""
    kib = parse_size_kib(pool)
    if kib < MIN_POOL_KIB:
        raise UsageError(
            f"sysbench-oltp: buffer_pool_size={pool} is below MariaDB's smallest, 2M",
            hint="Give 2M or more, e.g. 64M",
        )
    if guest.memory_kib and kib > MEMORY_SHARE * guest.memory_kib:
        raise UsageError(
            f"sysbench-oltp: buffer_pool_size={pool} is more than {MEMORY_SHARE:.0%} of the"
            f" guest's {guest.memory_kib // 1024} MiB, which MariaDB, sysbench and the system"
            " share",
            hint="Give a smaller buffer_pool_size, or the guests more memory",
        )


WORKLOAD = SysbenchOltp()
