"""The resolve step of every target, by the spec's ``provider`` value (the one list to extend for a new target)."""

from __future__ import annotations

from alicerce.targets.aws.resolve import RESOLVER as AWS
from alicerce.targets.onprem.resolve import RESOLVER as ONPREM
from alicerce.targets.resolver import TargetResolver

RESOLVERS: dict[str, TargetResolver] = {"aws": AWS, "onprem": ONPREM}
