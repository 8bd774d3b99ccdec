"""The error ids of the file and the schema (AL0xx, AL1xx): one table, read by `alicerce rules` and the docs.

The cross-field rules (AL2xx) are registered with their checks in :mod:`alicerce.rules`; these ids
belong to the loader, the schema and the overlay, which raise them inline. A test fails when
the code raises an id this table lacks, or the table lists one no code raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from alicerce.spec.loader import MAX_DEPTH, MAX_NODES, MAX_SCALAR
from alicerce.spec.overlay import FORBIDDEN
from alicerce.spec.schema_errors import MAX_REPORTED
from alicerce.spec.source import MAX_BYTES


@dataclass(frozen=True)
class ErrorId:
    id: str
    name: str
    summary: str


FILE_AND_SCHEMA_IDS: tuple[ErrorId, ...] = (
    ErrorId("AL000", "readable-file", "The spec is a regular file that can be read (not a directory, device or FIFO)."),
    ErrorId("AL001", "yaml-syntax", "The file is valid YAML: syntax, defined aliases, no control characters."),
    ErrorId("AL002", "duplicate-key", "No key appears twice in one mapping."),
    ErrorId("AL003", "yaml-tags", "Only the YAML 1.2 core schema's tags, values that match their tags, merge keys of mappings."),
    ErrorId("AL004", "value-count", f"At most {MAX_NODES:,} values in the document (alias bombs expand past it)."),
    ErrorId("AL005", "nesting-depth", f"Nesting at most {MAX_DEPTH} levels deep."),
    ErrorId("AL006", "file-size", f"The file is at most {MAX_BYTES // 2**20} MiB."),
    ErrorId("AL007", "encoding", "The file is UTF-8."),
    ErrorId("AL008", "empty-file", "The file holds a spec, not nothing or only comments."),
    ErrorId("AL009", "one-document", "The file holds one YAML document."),
    ErrorId("AL010", "top-level-mapping", "The top level is a mapping of keys."),
    ErrorId("AL011", "plain-keys", "Keys are plain text."),
    ErrorId("AL012", "environment-exists", "An environment named on the command line exists in the spec."),
    ErrorId("AL013", "error-limit", f"At most {MAX_REPORTED} schema errors are listed; the last line counts the rest."),
    ErrorId("AL014", "value-length", f"No key or value is longer than {MAX_SCALAR:,} characters."),
    ErrorId("AL100", "unknown-key", "Every key is one the schema defines (with did-you-mean for typos)."),
    ErrorId("AL101", "missing-key", "Every required key is present."),
    ErrorId("AL102", "allowed-value", "Values of a fixed set are one of its members (with did-you-mean)."),
    ErrorId("AL103", "value-type", "Values have the type the schema expects (text must be quoted where YAML reads a number)."),
    ErrorId("AL104", "value-check", "Values pass their field's own check: units, CIDRs, label syntax, host ranges, bounds."),
    ErrorId("AL120", "override-forbidden", f"Environment overrides never change {', '.join(FORBIDDEN)}."),
    ErrorId("AL121", "patch-directive", 'The only patch directive in an override is "$patch: delete".'),
    ErrorId("AL122", "delete-unknown", "An override deletes only items the base list has."),
    ErrorId(
        "AL123", "override-typo", "An override item that matches no base item and names only what it changes is a typo of a base name."
    ),
)
