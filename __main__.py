"""The Pulumi program of this repository (Pulumi.yaml): everything is in alicerce.emit.pulumi.program."""

from alicerce.emit.pulumi.program import main

main()
