"""The Pulumi program of this repository (Pulumi.yaml): everything is in alicerce.program."""

from alicerce.program import main

main()
