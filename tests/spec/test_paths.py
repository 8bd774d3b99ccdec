"""Finding paths are built from the models' fields, so a renamed field cannot point an error elsewhere."""

from __future__ import annotations

import pytest

from alicerce.rules.base import S


def test_attributes_become_the_yaml_aliases() -> None:
    assert S.node_pools[2].aws.capacity_reservation_id.path == ("nodePools", 2, "aws", "capacityReservationId")
    assert S.environments["dev"].sites[0].vpc_cidr.path == ("environments", "dev", "sites", 0, "vpcCidr")
    assert S.storage[1].class_.path == ("storage", 1, "class")  # `class` is a Python keyword
    assert S.monitoring.alerts[0].for_.path == ("monitoring", "alerts", 0, "for")
    assert S.node_pools[0].sharing.profiles["1g.10gb"].path == ("nodePools", 0, "sharing", "profiles", "1g.10gb")


def test_unions_offer_the_fields_of_every_variant() -> None:
    assert S.environments["prod"].sites[1].host_cidrs[0].path == ("environments", "prod", "sites", 1, "hostCidrs", 0)  # on-prem
    assert S.environments["prod"].sites[0].zones[1].path == ("environments", "prod", "sites", 0, "zones", 1)  # AWS
    assert S.storage[0].aws.per_unit_storage_throughput.path == ("storage", 0, "aws", "perUnitStorageThroughput")


def test_a_field_that_does_not_exist_fails_when_the_path_is_built() -> None:
    with pytest.raises(AttributeError, match="has no field 'instanceType'"):
        _ = S.node_pools[0].aws.instanceType  # the YAML spelling is not a field name
    with pytest.raises(AttributeError, match="has no field 'zone'"):
        _ = S.node_pools[0].zone
    with pytest.raises(KeyError):
        _ = S.metadata[0]
