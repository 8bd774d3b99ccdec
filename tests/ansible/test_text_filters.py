"""The roles' own check on spec text (issue 22, defect 1): a value that got past validate is refused, never
written, where it would add a line to /etc/modprobe.d or /etc/fstab (ansible.posix 2.1.0's mount module
escapes spaces, '&' and '\\' in fstab fields, not line breaks: plugins/modules/mount.py _escape_fstab)."""

from __future__ import annotations

import json
from typing import Any

import jinja2
import pytest

from tests.ansible.test_filters import _load  # one loader for the roles' filter plugins
from tests.conftest import DATA, ROOT

ROLE = ROOT / "alicerce" / "ansible" / "roles" / "parallel_fs_client"


T = _load(ROOT / "alicerce" / "ansible" / "filter_plugins" / "alicerce_text.py", "alicerce_text_filters")


def _render(template: str, **variables: Any) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters.update(T.FilterModule().filters())
    env.filters["comment"] = lambda text: f"# {text}"
    return env.from_string((ROLE / "templates" / template).read_text()).render(ansible_managed="managed", **variables)


def test_lnet_conf_holds_one_options_line_for_good_routes() -> None:
    text = _render(
        "lnet.conf.j2",
        parallel_fs_client_lnet_networks="o2ib0(ibrail0,ibrail1)",
        parallel_fs_client_lnet_routes=["o2ib1 10.40.0.250@o2ib", "tcp1 2 10.40.0.[250-251]@o2ib:1"],
    )
    options = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert options == ['options lnet networks="o2ib0(ibrail0,ibrail1)" routes="o2ib1 10.40.0.250@o2ib;tcp1 2 10.40.0.[250-251]@o2ib:1"']


@pytest.mark.parametrize(
    "route",
    [
        'o2ib1 10.0.0.1@o2ib"\ninstall lnet /bin/sh -c "id > /tmp/pwned',
        "o2ib1 10.0.0.1@o2ib\ninstall lnet /bin/true",
        "o2ib1 10.0.0.1@o2ib;tcp 10.0.0.2@tcp",
        "o2ib1\t10.0.0.1@o2ib",
        "$(id)",
    ],
)
def test_lnet_conf_refuses_a_route_that_would_not_stay_one_route(route: str) -> None:
    with pytest.raises(T.AnsibleFilterError, match="refuses to write LNet route"):
        _render("lnet.conf.j2", parallel_fs_client_lnet_networks="o2ib0", parallel_fs_client_lnet_routes=[route])


@pytest.mark.parametrize("networks", ['o2ib0" install lnet /bin/true "', "o2ib0(ib0)\ninstall lnet x", "o2ib0;tcp"])
def test_lnet_conf_refuses_hostile_networks(networks: str) -> None:
    with pytest.raises(T.AnsibleFilterError, match="refuses to write LNet networks"):
        _render("lnet.conf.j2", parallel_fs_client_lnet_networks=networks, parallel_fs_client_lnet_routes=[])


@pytest.mark.parametrize(
    "value",
    ["ro\n10.0.0.1@tcp:/x /etc lustre defaults 0 0", "a b", 'x"y', "x#y", "/mnt/../etc", "{{ x }}", "a\x00b", "x;y"],
)
def test_config_word_refuses_what_would_not_stay_one_fstab_field(value: str) -> None:
    with pytest.raises(T.AnsibleFilterError, match="refuses to write"):
        T.config_word(value, "mount option")


def test_beegfs_configs_refuse_a_hostile_management_host_and_mount_path() -> None:
    good = {"name": "beegfs", "source": "mgmt.dc1", "path": "/mnt/beegfs", "options": ["nosuid", "nodev"]}
    assert "sysMgmtdHost = mgmt.dc1" in _render("beegfs-client.conf.j2", item=good, parallel_fs_client_beegfs_rdma=True)
    with pytest.raises(T.AnsibleFilterError, match="BeeGFS management host"):
        _render(
            "beegfs-client.conf.j2", item={**good, "source": "mgmt\nconnDisableAuthentication = true"}, parallel_fs_client_beegfs_rdma=True
        )
    with pytest.raises(T.AnsibleFilterError, match="mount path"):
        _render("beegfs-mounts.conf.j2", _parallel_fs_client_beegfs=[{**good, "path": "/mnt/x /etc/shadow"}])
    with pytest.raises(T.AnsibleFilterError, match="mount option"):
        _render("beegfs-mounts.conf.j2", _parallel_fs_client_beegfs=[{**good, "options": ["ro /etc"]}])


def test_beegfs_mounts_carry_their_options_in_the_field_the_client_reads() -> None:
    """Issue 22: beegfs-mounts.conf held two fields, so a BeeGFS tier's mount options (nosuid,nodev included) never
    reached the mount. BeeGFS 7.4.7's beegfs-client.init reads `mnt cfg fstype extra_opts` (awk $1..$4) and mounts
    with `-ocfgFile=$cfg,_netdev,nosuid,$SELINUX_OPT,$extra_opts`: the options are the fourth field."""
    layout = json.loads((DATA / "upstream" / "beegfs" / "7.4.7" / "mounts-conf.json").read_text())
    assert layout["fields"] == ["mountpoint", "config", "fstype", "options"] and layout["mount_options"][-1] == "<options>"
    mounts = [{"name": "home", "path": "/home", "options": ["noatime", "nosuid", "nodev"]}]
    lines = [line for line in _render("beegfs-mounts.conf.j2", _parallel_fs_client_beegfs=mounts).splitlines() if line.strip()]
    entries = [dict(zip(layout["fields"], line.split(), strict=True)) for line in lines if not line.startswith("#")]
    assert entries == [
        {"mountpoint": "/home", "config": "/etc/beegfs/beegfs-client-home.conf", "fstype": "beegfs", "options": "noatime,nosuid,nodev"}
    ]


def test_the_mount_task_passes_every_fstab_field_through_the_filter() -> None:
    tasks = (ROLE / "tasks" / "configure.yml").read_text()
    assert "item.path | alicerce_config_word('mount path')" in tasks
    assert "item.source | alicerce_config_word('mount source')" in tasks
    assert "item.options | map('alicerce_config_word', 'mount option')" in tasks


def test_the_scratch_mount_passes_its_path_and_options_through_the_filter() -> None:
    tasks = (ROOT / "alicerce" / "ansible" / "roles" / "nvme_scratch" / "tasks" / "configure.yml").read_text()
    assert "nvme_scratch_mount_path | alicerce_config_word('mount path')" in tasks
    assert "nvme_scratch_mount_options | map('alicerce_config_word', 'mount option')" in tasks
