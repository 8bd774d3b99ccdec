"""A fabric rail that stopped: an InfiniBand/RoCE port that was active and is not, or one that keeps going down.

Each GPU of a rail-optimised node sends its collectives through its own port: one port down halves or stops NCCL's
bandwidth for every job on the node, and the communication-bound diagnosis only sees it once the job slows. Port
state per device and port comes from the node exporter's infiniband collector (node_exporter v1.12.1
collector/infiniband_linux.go 187-188: ``node_infiniband_state_id``, 4 = active; ``link_downed_total``, the times a
link failed to recover from an error and went down). A port that never came up (an unused second port, a storage
HCA's spare) is not a rail: only a port active within the last 30 days that is not now alerts (review obsreview3 G22).

The error counters are the port's PortCounters attribute, which the kernel reads at its InfiniBand widths (Linux
drivers/infiniband/core/sysfs.c PORT_PMA_ATTR: link_downed 8 bits, symbol_error and port_rcv_errors 16) and which the
InfiniBand architecture has stop at all ones, not wrap (the data counters come from the 64-bit PortCountersExtended
where the adapter has it, as every ConnectX does). node_exporter passes them on as counters (procfs class_infiniband.go
reads counters/<name> as a number). A wrap would read to Prometheus as a reset (no false flap: increase() counts
from 0 again); a counter stopped at its maximum reads as a link that never goes down again, so FabricLinkFlapping and
the fabric error KPI go silent on exactly the port that failed most. FabricCountersSaturated says so; clearing the
port's counters (perfquery -R) makes them count again, which Prometheus also reads as a reset.
"""

from __future__ import annotations

from alicerce.catalog.alerts import (
    FABRIC_COUNTERS_SATURATED,
    FABRIC_ERRORS_RISING,
    FABRIC_LINK_FLAPPING,
    FABRIC_PORT_DOWN,
    FABRIC_PORTS_RENAMED,
    FABRIC_RAILS_NEVER_UP,
    Alert,
    in_service,
    settled,
)
from alicerce.emit.kube.kpi import (
    EFA_ERRORS,
    IB_PORT_ACTIVE,
    KIND_ACTIVE,
    KIND_MOST_ACTIVE,
    POOL_NODE_LABEL,
    PORT_KIND,
    PORT_LAST_ACTIVE,
    PORT_RENAMED_SEEN,
    rail_matcher,
)
from alicerce.emit.storage_counters import rail_port_pools
from alicerce.resolve.model import ResolvedPlatform

PORT = "node, device, port"
# a node exporter restarted (an upgrade, its pod rescheduled) reports no port for a scrape or two, so FabricPortDown and
# FabricRailsNeverUp, gated on the node reporting ports, resolved and fired again after their `for`: a resolved and a
# second notification per restart (review obsreview39 N-4). They keep firing that long through it instead; a rail back
# ACTIVE resolves as much later
EXPORTER_RESTART = "10m"
# how long FabricPortsRenamed tells of ports that left a node while their kind stayed whole: one working day to confirm
# that the node was meant to be renamed, not a rail hidden by a card added beside it
RENAMED_NOTICE_SECONDS = 86400
# the largest value of each PortCounters error counter the node exporter serves (the widths above: 2^8 - 1, 2^16 - 1)
SATURATED = {
    "node_infiniband_link_downed_total": 255,
    "node_infiniband_symbol_error_total": 65535,
    "node_infiniband_port_errors_received_total": 65535,
}
# the node exporter answers on a node and its infiniband collector reports at least one port there
PORTS_REPORTED = "max by (node) (node_infiniband_state_id)"
# A link with a failing cable, transceiver or switch port stays ACTIVE while its receive and symbol errors climb and the
# transport retransmits (review obsreview27 G3): PortRcvErrors and SymbolErrorCounter of the IBA PortCounters (node
# exporter v1.12.1 node_infiniband_port_errors_received_total, node_infiniband_symbol_error_total, vendored metrics.json);
# on EFA, SRD retransmissions that timed out and peers whose connection became impaired (alicerce's EFA writer, from the
# efa driver's hw_counters; drops and RDMA work request errors also come from applications and congestion, not only the
# link). Link downs are FabricLinkFlapping's; a counter stopped at its maximum FabricCountersSaturated's.
#
# What a healthy InfiniBand link may count (review obsreview28 N-1): on HDR and NDR links the symbol errors NVIDIA's
# tools report are the errors left after forward error correction, what the application sees ("For NDR/HDR/EDR links,
# symbol errors (NDR/HDR) or effective errors (EDR) are the actual errors seen by the application level after error
# correction", NVIDIA ibdiagnet user manual v2.21, "Bit Error Rate (BER)",
# https://docs.nvidia.com/networking/display/ibdiagnetusermanualv221/Bit+Error+Rate+(BER)), and the same page's BER
# check flags a port above 1e-12 (its --ber_test default threshold 10^-12). A link within that bound still errs: at
# 1e-12 and 400 Gb/s (4X NDR) 0.4 times a second, 240 times in a 10-minute window, so "any rise" ticketed links the
# vendor's own check passes. The bound is errors per second above ALLOWED_BER x the port's signalling rate (node
# exporter's node_infiniband_rate_bytes_per_second: procfs v0.21.1 sysfs/class_infiniband.go parseRate, bytes/s of the
# port's rate file, "400 Gb/sec (4X NDR)" -> 5e10), for both counters: a packet in error carries at least one bit in
# error, so a link within the BER cannot count more of them. That the adapter's PMA SymbolErrorCounter (what the kernel
# serves as counters/symbol_error) is that post-correction count rests on NVIDIA's statement for its tools; a pre-FEC
# count would read far above 1e-12 on every PAM4 link (HDR and NDR run FEC because their raw BER is higher) and this
# alert would ticket every port at once, which FabricErrorsRising's runbook then says to check with ibdiagnet.
ALLOWED_BER = 1e-12
IB_ERROR_COUNTERS = ("node_infiniband_port_errors_received_total", "node_infiniband_symbol_error_total")
EFA_LINK_ERROR_COUNTERS = tuple(c for c in EFA_ERRORS if c.endswith(("retransmit_timeouts_total", "impaired_remote_connections_total")))
# The rate's window, derived from the bound (review obsreview26 G-C: no window without a source): a link at ALLOWED_BER
# counts 0.2 errors a second at 4X HDR (200 Gb/s), 120 in ten minutes, a Poisson count whose standard deviation is 9 %
# of it (13 % at 4X EDR's 60): ten minutes tell a link at the bound from one at twice it, shorter windows count too few.
# Held for three windows: a burst of errors raises one window's rate for that window's length only, so only errors
# that keep on past two windows ticket.
ERROR_RATE_MINUTES = 10
# What an EFA port may count (review obsreview29 N-4): SRD sprays each flow over many paths and retransmits what a path
# lost (amzn-drivers 64788ef7 kernel/linux/efa/SRD.txt, section 1: the requester finds lost packets and sends them
# again; Shalev et al., IEEE Micro 40(6), 2020), so a healthy busy port may time out a retransmission now and then, and
# "any rise" ticketed it. Neither the efa driver (src/efa_admin_cmds_defs.h efa_admin_network_stats: counts only) nor
# the EC2 or CloudWatch agent documents (CloudWatch-Agent-EFA: names only) give a healthy rate. AWS's own node
# monitoring agent, which alicerce installs on every EKS cluster (eks-node-monitoring-agent v1.7.0, commit c399089d,
# monitors/networking/efa/efa.go:61-67 and :82-88), reports an EFA port as degraded (reason EFAErrorMetric, severity
# Warning, pkg/reasons/reasons.yaml) when retrans_timeout_events or impaired_remote_conn_events outrun a token bucket of
# one event a second with a burst of 100 (its comment: a slow creep of errors is taken as not fatal, for want of an
# authoritative bound). The same bound here: more than one a second over the 10-minute window, held 30 minutes; a
# burst alone is the agent's to report
EFA_EVENTS_PER_SECOND = 1
ERROR_RATE_WINDOW = f"{ERROR_RATE_MINUTES}m"
ERROR_RATE_HOLD_MINUTES = 3 * ERROR_RATE_MINUTES


def fabric_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    return [*_rail_alerts(rp, site_name), *_error_alerts(rp, site_name)]


def _rising(counters: tuple[str, ...], devices: str = "", above: str = "> 0") -> str:
    """Per port, how many of ``counters`` rose faster than ``above`` over the last ERROR_RATE_WINDOW (each kept apart in
    a label: a comparison drops the name, and `or` would keep one counter of a port)."""
    rising = " or ".join(
        f'label_replace(sum by ({PORT}) (rate({name}{devices}[{ERROR_RATE_WINDOW}])) {above}, "counter", "{name}", "", "")'
        for name in counters
    )
    return f"count by ({PORT}) ({rising})"


def _beyond_ber(devices: str) -> str:
    """Errors per second more than a link at ALLOWED_BER makes at its port's signalling rate."""
    return f"> on ({PORT}) {ALLOWED_BER * 8:g} * max by ({PORT}) (node_infiniband_rate_bytes_per_second{devices})"


def _error_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    """A port that keeps counting link errors for 30 minutes: InfiniBand/RoCE pools with port counters, EFA pools."""
    pools = rp.site(site_name).pools
    terms = [f"{_rising(IB_ERROR_COUNTERS, m, _beyond_ber(m))} * on (node) group_left () ({_members(p.name)} > 0)"
             for p in pools if p.rdma is not None and p.rdma.port_counters for m in (rail_matcher(p.rdma.rail_devices),)]  # fmt: skip
    terms += [f"{_rising(EFA_LINK_ERROR_COUNTERS, above=f'> {EFA_EVENTS_PER_SECOND}')} * on (node) group_left () ({_members(p.name)} > 0)"
              for p in pools if p.rdma is not None and p.rdma.technology == "efa"]  # fmt: skip
    if not terms:
        return []
    expr = in_service("(" + " or ".join(f"({t})" for t in terms) + ")")
    return [Alert(FABRIC_ERRORS_RISING, expr, f"{ERROR_RATE_HOLD_MINUTES}m", "warning",
                  "Fabric port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} keeps counting link errors",
                  "{{ $value }} of the port's error counters (InfiniBand/RoCE: receive and symbol errors, faster than a "
                  f"link at a bit error rate of {ALLOWED_BER:g} errs; EFA: retransmit timeouts, impaired connections, faster than "
                  f"{EFA_EVENTS_PER_SECOND} a second, AWS's node monitoring agent's bound) rose in every "
                  f"{ERROR_RATE_MINUTES} minutes for {ERROR_RATE_HOLD_MINUTES} while the link stayed up: a failing "
                  "cable, transceiver or switch port makes the transport retransmit, and every collective on this rail "
                  "runs at its pace. Check the link (mlxlink -d {{ $labels.device }} -e, ibdiagnet; on EFA the instance's "
                  "status checks), reseat or replace the cable, or drain the node if it keeps on.")]  # fmt: skip


def _members(pool: str) -> str:
    return f'max by (node) (kube_node_labels{{{POOL_NODE_LABEL}="{pool}"}})'


def _rail_alerts(rp: ResolvedPlatform, site_name: str) -> list[Alert]:
    fabric_pools = rail_port_pools(rp.site(site_name))
    # the RDMA adapters a host of the pool declares (onprem.hcas; the fabric's rails by default, and never fewer: rule
    # AL242's check in targets/onprem/rules.py): a storage adapter declared beside the rails is expected up too, so a
    # rail that never came up, or was forgotten after 30 days down, beside an ACTIVE storage port is still short
    # (review obsreview36 G-1). Where the pool names its railDevices only those are counted, so they are the bar: hcas 9
    # with 8 named rails read every healthy node as short (review obsreview39 D-2)
    adapters = {p.name: len(p.rdma.rail_devices) or p.rdma.interfaces for p in fabric_pools if p.rdma is not None}
    # the rails' devices where the spec names them (pool.onprem.railDevices): a storage or in-band port beside the rails
    # neither counts as a rail nor pages as one (review obsreview6 DEFECT 2); empty, every device the exporter reports
    devices = {p.name: rail_matcher(p.rdma.rail_devices) for p in fabric_pools if p.rdma is not None}
    pools = sorted(adapters)
    if not pools:
        # EFA: the efa driver reports its port ACTIVE whenever the device is up and keeps no link-down or symbol error
        # counters; its errors (drops, RDMA work request errors, retransmit timeouts, impaired connections) count in the
        # fabric error KPI, and EfaCountersMissing says when a node's EFA ports report nothing (alicerce.emit.kube.sources)
        return []
    nodes = f'max by (node) (kube_node_labels{{{POOL_NODE_LABEL}=~"{"|".join(pools)}"}})'
    on_pools = f"* on (node) group_left () ({nodes} > 0)"
    # a port active in the last 30 days (kpi.PORT_LAST_ACTIVE) that is not ACTIVE now: a rail down for days stays
    # reported, also after the node was cordoned and uncordoned in between. Present or not: an HCA that left
    # /sys/class/infiniband (a PCIe surprise removal, a card not enumerated after a reboot) has no state series at all
    # and is down as well, on a node whose exporter still reports ports (review obsreview6 DEFECT 5), whatever else is
    # ACTIVE beside it: gating it on the node being short of rails silenced an HCA off the bus beside a storage port on
    # a pool that names no rail devices, 7 rails + 1 storage port read as 8 (review obsreview35 D-1). Unless it was
    # renamed: the rdma role names devices by PCI address (roles/rdma rdma-naming.rules.j2, NAME_PCI), so a BIOS update,
    # a card added or removed, a board replaced under the same host name (its PCI buses renumbered) or an adapter moved
    # to another slot brings rails back ACTIVE under new names, and each old one read as a rail down for the 30 days it
    # is remembered (reviews obsreview34 N-3, obsreview36 D-1). Six rounds of telling a renamed rail from a lost one by
    # names and first-seen times each found a new false fire or silence (obsreview34 to obsreview39): counts instead. A
    # port gone is down unless its node has, per port kind (the card's ASIC and the port number: kpi.PORT_KIND), as many
    # ports ACTIVE now as the most it had at once, of the ports it remembers (kpi.KIND_ACTIVE, kpi.KIND_MOST_ACTIVE). A rename,
    # once, twice, put back or rolled back, keeps the count whole; a rail lost beside a card of another kind added, port
    # 2 of a known card cabled, or another rail back after a reboot does not. A card moved to another slot and a rail
    # lost in the reboot that adds a card of its kind read the same (the exporter reports no card serial to tell them
    # apart): FabricPortsRenamed says so for a day instead of nothing (review obsreview39 G-3). Known and accepted: a
    # port that vanished before the records' first evaluation is not seen (the most starts at the count then)
    state = f"max by ({PORT}) (node_infiniband_state_id)"

    kind = f"node, port, {PORT_KIND}"
    whole = f"({KIND_ACTIVE} >= on ({kind}) {KIND_MOST_ACTIVE})"

    def in_pools(named: list[str]) -> str:
        return f'* on (node) group_left () (max by (node) (kube_node_labels{{{POOL_NODE_LABEL}=~"{"|".join(named)}"}}) > 0)'

    def lost(matcher: str, named: list[str]) -> str:
        remembered = f"{PORT_LAST_ACTIVE}{matcher}"
        inactive = f"({remembered} and on ({PORT}) ({state} != {IB_PORT_ACTIVE}))"
        vanished = f"({remembered} unless on ({PORT}) {state})"
        return f"({inactive} or ({vanished} unless on ({kind}) {whole})) {in_pools(named)}"

    def renamed(matcher: str, named: list[str]) -> str:
        # the ports gone while their kind is whole, for a day from when that was first seen in service
        seen = f"{PORT_RENAMED_SEEN}{matcher} > time() - {RENAMED_NOTICE_SECONDS}"
        return f"((({seen}) and on ({kind}) {whole}) {in_pools(named)})"

    # one term for the pools that read the same devices (every pool without railDevices): a term is ~500 characters
    # (counts, not names), and one per pool would still grow with the pools
    by_matcher: dict[str, list[str]] = {}
    for pool in pools:
        by_matcher.setdefault(devices[pool], []).append(pool)
    down = in_service("(" + " or ".join(f"({lost(m, named)})" for m, named in by_matcher.items()) + f") and on (node) {PORTS_REPORTED}")
    moved = in_service("(" + " or ".join(renamed(m, named) for m, named in by_matcher.items()) + f") and on (node) {PORTS_REPORTED}")
    # "more than twice": the counter steps by whole downs, but increase() extrapolates the range's first and last
    # samples to the window's edges (Prometheus v3 promql/functions.go extrapolatedRate, by up to 1.1 x the mean scrape
    # interval each side), so two downs read 2.03 on an evaluation off the scrapes and `> 2` fired on two. Half-way
    # between 2 and 3: the extrapolation of an hour's window stays under 10 % with scrapes up to 5 minutes apart
    # (review obsreview21 F2)
    flapping = in_service(f"sum by ({PORT}) (increase(node_infiniband_link_downed_total[1h])) {on_pools} > 2.5")

    # a rail that never came up (a dead HCA, an uncabled port on a new node) was never active, so FabricPortDown cannot
    # see it: fewer ports active in the last 30 days than the pool's rails, once the node is past its install grace
    # (review obsreview5 G5). A port that went down is still counted here: FabricPortDown reports it
    def never_up(pool: str) -> str:
        ever = f"(count by (node) ({PORT_LAST_ACTIVE}{devices[pool]}) or 0 * {_members(pool)})"
        return f"{ever} * on (node) group_left () ({_members(pool)} > 0) < {adapters[pool]}"

    # each pool's term in parentheses, and their union too: `and`/`unless` bind tighter than `or`, so unwrapped the grace
    # and the cordon filtered only the last pool's term (review obsreview6 DEFECT 4)
    # only where the node exporter reports ports: a node whose exporter is down (NodeExporterAbsent) or whose collector
    # sees no port at all (FabricCountersAbsent) is not a cabling fault (review obsreview6 DEFECT 3)
    pools_short = "(" + " or ".join(f"({never_up(p)})" for p in pools) + ")"
    missing = in_service(settled(f"{pools_short} and on (node) {PORTS_REPORTED}"))
    # a comparison drops the name: each keeps it in a label of its own, or `or` would keep one counter of a port
    stopped = " or ".join(f'label_replace({name} >= {top}, "counter", "{name}", "", "")' for name, top in SATURATED.items())
    saturated = in_service(f"count by ({PORT}) ({stopped}) {on_pools}")
    return [
        Alert(FABRIC_RAILS_NEVER_UP, missing, "15m", "warning",
              "Node {{ $labels.node }} has {{ $value }} fabric ports up, fewer than its pool's RDMA adapters",
              "A rail's adapter never reached ACTIVE on this node: a dead HCA, a missing cable or switch port, a "
              "subnet manager that did not bring it up. Jobs placed here run their collectives on fewer rails: check "
              "ibstat and the cabling before the node takes multi-node jobs. It goes on 10 minutes after it ends, so a "
              "node exporter restart does not resolve it.", keep_firing_for=EXPORTER_RESTART),
        Alert(FABRIC_PORT_DOWN, down, "5m", "warning",
              "Fabric port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} is no longer active",
              "A rail that was up in the last 30 days is down: every job on this node runs its collectives on fewer rails. "
              "Check the cable and switch port (ibstat, mlxlink), then drain the node if it does not come back. A port gone "
              "from ibstat altogether is reported too (an adapter off the PCIe bus), unless the node has as many "
              "ports of its kind (the card's ASIC and the port number) ACTIVE now as it had at once in the "
              "last 30 days: PCI buses renumbered by a BIOS update or a card added, or an adapter moved to another slot "
              "or put back, rename ports (the devices are named by PCI address) but leave their count whole. With one "
              "short, every port of the kind gone is reported, old names included: the rail is the new name ibstat "
              "shows not ACTIVE, or an adapter missing from ibstat. The warnings end when as many ports of the kind are "
              "ACTIVE again, or for each port 30 days after it was lost. A card of the rails' own kind added in the "
              "reboot that loses a rail makes up the count: FabricPortsRenamed says so. A card replaced by another model "
              "in another slot is another kind, and its old port reads as lost for 30 days. A port gone before the counts "
              "began (their first evaluation) is not known. The warning goes on 10 minutes after it ends (a rail back, "
              "the node cordoned), so a node exporter restart does not resolve it. Where the pool names its railDevices only "
              "those are counted, so a rail renamed reads as lost until railDevices names its new device.",
              keep_firing_for=EXPORTER_RESTART),
        Alert(FABRIC_PORTS_RENAMED, moved, "15m", "info",
              "Fabric port {{ $labels.device }}/{{ $labels.port }} left {{ $labels.node }} while as many ports of its "
              "kind are ACTIVE under other names",
              "Read as renamed, not as a rail down: PCI buses renumbered by a BIOS update or a card added or removed, "
              "or an adapter moved to another slot, give ports new names (the devices are named by PCI address). If "
              "none of that happened to this node, a rail was lost and a port of its kind (the card's ASIC and the "
              "port number) added or cabled since makes up the count, a storage port of the rails' model included: "
              "compare ibstat with the node's cabling. Naming the pool's railDevices has each rail checked by name. "
              "Ends a day after it was first seen with the node back in service.", keep_firing_for=EXPORTER_RESTART),
        Alert(FABRIC_LINK_FLAPPING, flapping, "0m", "warning",
              "Fabric port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} went down more than twice in an hour",
              "A link that keeps failing and retraining points at a bad cable or transceiver: NCCL stalls each time. "
              "Check symbol errors and the cable (mlxlink), and replace it."),
        Alert(FABRIC_COUNTERS_SATURATED, saturated, "15m", "warning",
              "Error counters of fabric port {{ $labels.device }}/{{ $labels.port }} on {{ $labels.node }} stopped at their maximum",
              "{{ $value }} of the port's error counters (link downed 255, symbol and receive errors 65535) no longer "
              "count: FabricLinkFlapping and the fabric error KPI read this port as clean whatever it does. Clear "
              "the counters on the node (perfquery -C {{ $labels.device }} -P {{ $labels.port }} -R) so they count "
              "again. Symbol or receive errors alone fill them in days on a healthy link (at the 1e-12 error rate "
              "FabricErrorsRising allows, 65,535 take about 45 h at 400 Gb/s, 91 h at 200): look at the cable "
              "(mlxlink) when FabricErrorsRising or FabricLinkFlapping fired for the port too, or when the link downs "
              "saturated."),
    ]  # fmt: skip
