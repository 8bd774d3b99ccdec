"""Grammars for the spec's text fields: every value that reaches a config file, a command line, fstab,
modprobe.d, a unit file, a Kubernetes object or a workflow is checked against an allow-list here.

A grammar is a pydantic type (``Annotated[str, AfterValidator, WithJsonSchema]``): the check runs at
schema validation, so a bad value is a located AL104 error, and the JSON Schema carries the same
pattern so editors flag it too. Messages name the first character that is not allowed, with its
code point and position, and show user text escaped (a terminal escape in a spec never reaches the
user's terminal raw). The writers (alicerce/emit, the Ansible roles) refuse such text on their own
as well; this is the first line, not the only one.
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from alicerce.spec.record import record

INVISIBLE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000e0000-\U000e0fff]"
)
"""Characters a terminal or an editor acts on or hides: C0/C1 controls (ESC starts terminal escape
codes), DEL, soft hyphen, zero-width characters, line/paragraph separators, bidi controls (the Arabic
letter mark too), variation selectors, Hangul fillers and tag characters (which smuggle hidden ASCII)."""


def escaped(text: str, limit: int | None = 60) -> str:
    """``text`` safe to print: invisible characters written as ``\\xNN``/``\\uNNNN``, long text cut."""
    cut = text if limit is None or len(text) <= limit else text[:limit]

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    shown = INVISIBLE.sub(escape, cut)
    return shown if limit is None or len(text) <= limit else f"{shown}... ({len(text):,} characters)"


def char_name(char: str) -> str:
    """``'а' (U+0430 CYRILLIC SMALL LETTER A)``: the character, its code point and its Unicode name."""
    name = unicodedata.name(char, "") or {0: "NULL", 0x1B: "ESCAPE", 0x0A: "LINE FEED", 0x09: "TAB", 0x0D: "CARRIAGE RETURN"}.get(
        ord(char), "control character"
    )
    return f"'{escaped(char)}' (U+{ord(char):04X} {name})"


def first_outside(text: str, allowed: re.Pattern[str]) -> tuple[int, str] | None:
    """The 1-based position and character of the first character of ``text`` not matched by ``allowed``."""
    for index, char in enumerate(text):
        if not allowed.fullmatch(char):
            return index + 1, char
    return None


def bad_character(text: str, allowed: re.Pattern[str], what: str, allowed_words: str) -> str | None:
    """A message naming the first character of ``text`` outside ``allowed`` (None when there is none)."""
    found = first_outside(text, allowed)
    if found is None:
        return None
    position, char = found
    looks = ""
    if ord(char) > 0x7F and not INVISIBLE.match(char):
        folded = confusable(char)
        looks = f", which looks like '{folded}' but is not ASCII" if folded else ", which is not ASCII"
    return f'{what} "{escaped(text)}": character {char_name(char)} at position {position} is not allowed{looks} ({allowed_words})'


# the few look-alikes NFKD does not fold to ASCII (Cyrillic and Greek letters that render as Latin ones)
_CONFUSABLE = dict(
    zip(
        "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425"
        "\u03bf\u03b1\u03bd\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
        "aeopcyxijsABEKMHOPCTXoavABEZHIKMNOPTYX",
        strict=True,
    )
)


def confusable(char: str) -> str:
    """The ASCII letter ``char`` renders like, or '' when it looks like none."""
    return unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode() or _CONFUSABLE.get(char, "")


SECRET_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a PEM block (a private key or certificate)", re.compile(r"-----BEGIN [A-Z0-9 ]*-----")),
    ("an OpenSSH private key", re.compile(r"\bopenssh-key-v1\b|b3BlbnNzaC1rZXktdjE")),
    ("a kubeconfig", re.compile(r"(client-key-data|client-certificate-data|certificate-authority-data)\s*:|\bkind\s*:\s*Config\b")),
    ("an AWS access key id", re.compile(r"(?<![A-Z0-9])(AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}(?![A-Z0-9])")),
    ("an AWS secret access key", re.compile(r"(?i)aws_?secret_?access_?key|(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a GitLab or Slack token", re.compile(r"\b(glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,})")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    ("a password in a URL", re.compile(r"://[^/\s:@]+:[^/\s@]+@")),
    # Events API v2 integration (routing) keys: 32 characters, lowercase hex for a service's integration, R0 and 30
    # more for an event orchestration (PagerDuty developer docs, Events API v2 "routing_key"). Alertmanager reads one
    # from routing_key_file only: a receiver's `secret` names the Kubernetes Secret that holds it.
    ("a PagerDuty integration key", re.compile(r"(?<![A-Za-z0-9])([0-9a-f]{32}|R0[A-Z0-9]{30})(?![A-Za-z0-9])")),
    ("a Slack webhook URL", re.compile(r"hooks\.slack\.com/(services|workflows|triggers)/[A-Za-z0-9/_-]*")),
    ("a long base64 blob", re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")),
)
"""Shapes of secret material (the kinds scanners such as gitleaks look for). A spec only ever names a
secret (kubeconfigSecret: dc1Kubeconfig); whatever it holds is copied into resolved.json, READMEs and
reports that are committed."""


def _mixed_key(word: str) -> bool:
    """A key draws digits and letters alike: 32 digits is a number, and no key is letters alone."""
    return bool(re.search(r"[0-9]", word[2:]) and re.search(r"[A-Za-z]", word[2:]))


@functools.lru_cache(maxsize=8192)  # a text is asked about by its grammar and by AL276, in every environment
def secret_shape(text: str) -> str | None:
    """What kind of secret ``text`` looks like, or None."""
    for kind, shape in SECRET_SHAPES:
        match = shape.search(text)
        if match is None:
            continue
        if kind == "an AWS secret access key" and not match.group().lower().startswith("aws"):
            word = match.group()  # 40 base64 characters: a key mixes cases and digits (a git commit id is lowercase hex)
            if not (re.search(r"[a-z]", word) and re.search(r"[A-Z]", word) and re.search(r"[0-9]", word)):
                continue
        if kind == "a PagerDuty integration key" and not any(_mixed_key(m.group()) for m in shape.finditer(text)):
            continue
        if kind == "a long base64 blob" and not (re.search(r"[a-z]", match.group()) and re.search(r"[A-Z]", match.group())):
            continue
        return kind
    return None


SECRET_HINT = (
    "remove it (and rotate it: it may already be in git history); store it as a Pulumi secret "
    "(`pulumi config set --secret NAME`) or in ansible-vault, and give its name (e.g. kubeconfigSecret: dc1Kubeconfig)"
)


def redacted(text: str) -> str:
    """``text`` with anything shaped like a secret replaced by ``<redacted>`` (the last guard of every error line)."""
    # a quoted value that holds a secret is hidden whole (a kubeconfig's other lines are no one's business either)
    text = re.sub(r'"[^"]*"', lambda m: '"<redacted>"' if secret_shape(m.group()) else m.group(), text)
    for kind, shape in SECRET_SHAPES:
        if kind == "a PagerDuty integration key":
            text = shape.sub(lambda m: "<redacted>" if _mixed_key(m.group()) else m.group(), text)
        elif kind not in ("an AWS secret access key", "a long base64 blob"):
            text = shape.sub("<redacted>", text)
    return re.sub(r"[A-Za-z0-9/+=]{40,}", lambda m: "<redacted>" if secret_shape(m.group()) else m.group(), text)


GrammarCheck = Callable[[str], str | None]


@record
class Grammar:
    """A text grammar: ``chars`` (a regex character class) says which characters may appear, ``pattern``
    how they are arranged; ``form`` describes it for the message; ``extra`` checks what a regex cannot.

    Used as ``Annotated[str, G.validator, G.json]`` (a module-level alias, so type checkers see a str).
    """

    what: str
    chars: str
    allowed_words: str
    pattern: str
    form: str
    max_length: int
    extra: GrammarCheck | None = None

    def problem(self, value: str) -> str | None:
        """What is wrong with ``value`` (None when it is in the grammar)."""
        kind = secret_shape(value)
        if kind is not None:  # said first, and without echoing the value: it must not reach a CI log either
            return f"this {self.what} looks like {kind}; a spec never holds a secret (name a Pulumi secret or vault key instead; rotate it)"
        if len(value) > self.max_length:
            return f"{self.what} is {len(value):,} characters, over the {self.max_length} allowed"
        if value.startswith("-"):  # on a command line (CI workflows, Ansible argv) it would be read as an option
            return f'{self.what} "{escaped(value)}" starts with "-", which a command line reads as an option'
        problem = None
        if not self._accepts.fullmatch(value):  # one regex for a valid value; the two checks say what is wrong
            problem = bad_character(value, re.compile(self.chars), self.what, self.allowed_words)
            if problem is None and not re.fullmatch(self.pattern, value):
                problem = f'{self.what} "{escaped(value)}" is not valid: expected {self.form}'
        if problem is None and self.extra is not None:
            problem = self.extra(value)
        return problem

    @functools.cached_property
    def _accepts(self) -> re.Pattern[str]:
        """Text of only ``chars`` that ``pattern`` matches whole, compiled on first use (a cold `validate` meets
        a third of the grammars)."""
        return re.compile(rf"(?={self.chars}*\Z)(?:{self.pattern})")

    def check(self, value: str) -> str:
        problem = self.problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def validator(self) -> AfterValidator:
        return AfterValidator(self.check)

    @property
    def json(self) -> WithJsonSchema:
        return WithJsonSchema({"type": "string", "pattern": self.pattern, "maxLength": self.max_length})


SYSTEM_PATHS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
    "/var/lib",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/etcd",
    "/var/log",
    "/opt/cni",
    "/tmp",
)
"""Mount points that would hide the operating system, the kubelet or the container runtime."""

SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/opt/cni",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib/containerd",
    "/var/lib/etcd",
    "/var/lib/kubelet",
    "/var/run",
    "/var/spool",
)
"""Trees nothing may be mounted inside either: a mount under /etc/ shadows part of the system's config, one
under /root/.ssh or /var/spool/cron hands root logins or cron jobs to whoever writes the export, one under
/opt/cni/bin or /var/lib/containerd replaces what the container runtime runs as root."""


def _path_segments(value: str) -> str | None:
    if any(part in (".", "..") for part in value.split("/")):
        return f'path "{escaped(value)}" has a "." or ".." segment; write it normalised, as {posixpath.normpath(value)!r} is'
    if "//" in value or (value.endswith("/") and value != "/"):
        return f'path "{escaped(value)}" has an empty segment; write it as {posixpath.normpath(value)!r}'
    return None


def mount_point_problem(value: str) -> str | None:
    """Why ``value`` (an absolute path) cannot be a mount point: a "." or ".." segment, or a system path."""
    value = value.rstrip("/") or "/"
    problem = _path_segments(value)
    if problem is not None:
        return problem
    if value in SYSTEM_PATHS or any(value == tree or value.startswith(f"{tree}/") for tree in SYSTEM_TREES):
        return f"{value} is a system path; mounting over it would hide the operating system's files (use /mnt/..., /data/... or /scratch)"
    return None


_PATH_CHARS = r"[A-Za-z0-9._/-]"
_PATH_WORDS = "letters, digits, '.', '_', '-' and '/'"

_MOUNTPATH = Grammar(
    "mount path",
    _PATH_CHARS,
    _PATH_WORDS,
    r"^[A-Za-z0-9._/][A-Za-z0-9._/-]*$",
    "a path such as /mnt/datasets",
    255,
)
"""Where a tier is mounted on nodes: fstab's second column, a mount unit, a PersistentVolume path. Its
characters are checked here; rule AL235 checks it is absolute, normalised and no system path (:func:`mount_point_problem`)."""

_SERVERPATH = Grammar(
    "exported path", _PATH_CHARS, _PATH_WORDS, r"^(/[A-Za-z0-9._-]+)+/?$|^/$", "an absolute path such as /export/home", 255, _path_segments
)
"""A path on a server (an NFS export): fstab's first column after ``server:``, a PersistentVolume's nfs.path."""

_HOST = Grammar(
    "host",
    r"[A-Za-z0-9.-]",
    "letters, digits, '.' and '-'",
    r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$",
    "a host name or IPv4 address such as nfs.dc1.example.com",
    253,
)
"""A server's DNS name or IPv4 address (fstab, a PersistentVolume, a client config)."""

_NID = r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(@[a-z][a-z0-9]*)?"
_NIDLIST = Grammar(
    "server",
    r"[A-Za-z0-9.@:,-]",
    "letters, digits, '.', '-', '@', ':' and ','",
    rf"^{_NID}([:,]{_NID})*$",
    "a Lustre NID such as 10.0.0.10@o2ib (failover NIDs joined by ':'), or a host name",
    512,
)
"""Lustre MGS NIDs (``10.0.0.10@o2ib:10.0.0.11@o2ib``), a BeeGFS management host or a Weka backend."""

_FSNAME = Grammar(
    "file system name",
    r"[A-Za-z0-9_-]",
    "letters, digits, '_' and '-'",
    r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$",
    "a name such as scratch",
    63,
)
"""A parallel file system's name on its server (``server:/NAME`` in fstab, a client config file name)."""

_MOUNTOPTION = Grammar(
    "mount option",
    r"[A-Za-z0-9_.:=+@/-]",
    "letters, digits and '_', '.', ':', '=', '+', '@', '/', '-'; one option an item, no ','",
    r"^[A-Za-z0-9_][A-Za-z0-9_.:=+@/-]*$",
    "one mount option such as noatime or rsize=1048576",
    128,
)
"""One item of fstab's fourth column (joined with ',' by alicerce): no separator, no whitespace, no quote."""

LNET_ROUTE = Grammar(
    "LNet route",
    r"[A-Za-z0-9.@:\[\], -]",
    "letters, digits, one space between fields, and '.', '@', ':', ',', '-', '[' and ']'",
    r"^[a-z][a-z0-9]* ([0-9]{1,3} )?[A-Za-z0-9.\[\],-]+@[a-z][a-z0-9]*(:[0-9]{1,3})?$",
    "'NET [HOPS] GATEWAY_NID[:PRIORITY]' such as 'o2ib1 10.40.0.250@o2ib'",
    256,
)
"""One LNet route, written into ``options lnet routes="...;..."`` in /etc/modprobe.d (lustre manual, LNet routes)."""

_URL = Grammar(
    "URL",
    r"[A-Za-z0-9.:/_~%+@-]",
    "letters, digits and '.', ':', '/', '_', '~', '%', '+', '@', '-'",
    r"^https?://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[A-Za-z0-9._~%+@/-]*)?$",
    "an http(s) URL such as https://s3.dc1.example.com",
    2048,
)
"""An endpoint URL (an S3 endpoint, a Helm repository): no credentials, query or fragment."""

_APIENDPOINT = Grammar(
    "API endpoint",
    r"[A-Za-z0-9.:/-]",
    "letters, digits and '.', ':', '/', '-'",
    r"^(https://)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?/?$",
    "https://HOST:PORT such as https://k8s.dc1.example.com:6443",
    300,
)
"""A Kubernetes API endpoint (kubespray variables, kubeconfigs)."""

_GITURL = Grammar(
    "repository URL",
    r"[A-Za-z0-9.:/_~%+@-]",
    "letters, digits and '.', ':', '/', '_', '~', '%', '+', '@', '-'",
    r"^[A-Za-z0-9.:/_~%+@][A-Za-z0-9.:/_~%+@-]*$",
    "a git URL",
    2048,
)
"""A git repository URL (Argo CD Applications and repository secrets, CI workflows): its characters here, its
form (https://, ssh:// or scp-like, no credentials) in rule AL284."""


def _git_ref(value: str) -> str | None:
    # git check-ref-format: no "..", no "@{", no component starting with "." or ending with ".lock"
    if ".." in value or "@{" in value or value.endswith((".", "/", ".lock")) or "/." in value or value.startswith("-"):
        return f'git revision "{escaped(value)}" is not a valid ref name (git check-ref-format)'
    return None


_GITREVISION = Grammar(
    "git revision",
    r"[A-Za-z0-9._/+-]",
    "letters, digits and '.', '_', '/', '+', '-'",
    r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$",
    "a branch, tag or commit such as main, v1.2.0 or a commit id",
    255,
    _git_ref,
)
"""A branch, tag or commit: Argo CD's targetRevision and the CI workflows' triggers."""


_REPOPATH = Grammar(
    "repository path",
    _PATH_CHARS,
    _PATH_WORDS,
    r"^[A-Za-z0-9._/][A-Za-z0-9._/-]*$",
    "a relative path such as generated or specs/platform.yaml",
    255,
)
"""A path inside the git repository (the generated trees' folder, the spec file): workflows and Argo CD read it.
Its characters here; rule AL284 keeps it relative and inside the repository."""


def _prefix_segments(value: str) -> str | None:
    if any(part in (".", "..") for part in value.split("/")[:-1]):
        return f'key prefix "{escaped(value)}" has a "." or ".." segment, which a file system linked to the tier resolves upward'
    return None


_OBJECTPREFIX = Grammar(
    "key prefix",
    r"[A-Za-z0-9!_.()=/-]",
    "letters, digits and '!', '_', '.', '(', ')', '=', '/', '-'",
    r"^[A-Za-z0-9!_.()=][A-Za-z0-9!_.()=-]*/([A-Za-z0-9!_.()=-]+/)*$",
    "a key prefix of non-empty segments, ending in '/', such as research/ or curated/year=2026/",
    512,
    _prefix_segments,
)
"""A team's key prefix in an object tier: an IAM policy resource and condition on S3, and the directory of the team's
claim on a file system linked to the tier (an FSx subdirectory mount): no '..' to climb out of it, no IAM wildcard
('*', '?'), S3's safe characters and '=' (partition folders)."""

_SECRETNAME = Grammar(
    "secret name",
    r"[A-Za-z0-9_.:-]",
    "letters, digits and '_', '.', ':', '-'",
    r"^([A-Za-z][A-Za-z0-9_.-]*:)?[A-Za-z][A-Za-z0-9_.-]*$",
    "the name of a Pulumi secret config key such as dc1Kubeconfig (never the secret itself)",
    128,
)
"""The name of a Pulumi secret config key: written into resolved.json, READMEs and commands, so only a name."""

_VERSION = Grammar(
    "version",
    r"[A-Za-z0-9.+_~-]",
    "letters, digits and '.', '+', '_', '~', '-'",
    r"^[A-Za-z0-9][A-Za-z0-9.+_~-]*$",
    "a version such as 1.33, 580.95.05 or v25.10.0",
    64,
)
"""A version: apt pins, Helm chart versions and image tags."""

_IDENTIFIER = Grammar(
    "identifier",
    r"[A-Za-z0-9._:/@+-]",
    "letters, digits and '.', '_', ':', '/', '@', '+', '-'",
    r"^[A-Za-z0-9._:/@+][A-Za-z0-9._:/@+-]*$",
    "a single word such as groups, kubernetes or oidc:",
    256,
)
"""A token word (OIDC client id, claim names, prefixes): kube-apiserver flags and EKS settings."""

_INTERFACE = Grammar(
    "network interface",
    r"[A-Za-z0-9_.:@-]",
    "letters, digits and '_', '.', ':', '@', '-'",
    r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$",
    "a Linux interface name of at most 15 characters such as eno1",
    15,
)
"""A Linux interface name (IFNAMSIZ 16 with the NUL): kube-vip's configuration."""

_DEVICE = Grammar(
    "device",
    r"[A-Za-z0-9._:/+-]",
    "letters, digits and '.', '_', ':', '/', '+', '-'",
    r"^(/dev/[A-Za-z0-9._:+-]+(/[A-Za-z0-9._:+-]+)*|[a-z][a-z0-9]*)$",
    "a stable device name such as /dev/disk/by-id/nvme-... or nvme1n1",
    255,
    lambda value: _path_segments(value) if value.startswith("/") else None,
)
"""A block device (mdadm's command line in the nvme_scratch role)."""

_WORD = Grammar(
    "name",
    r"[A-Za-z0-9._-]",
    "letters, digits and '.', '_', '-'",
    r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$",
    "a single word of letters, digits, '.', '_' and '-' such as r01",
    63,
)
"""A word that becomes an identifier elsewhere (a rack id is an Ansible inventory group)."""

_CATALOGID = Grammar(
    "catalog id",
    r"[A-Za-z0-9._+-]",
    "letters, digits and '.', '_', '+', '-'",
    r"^[A-Za-z0-9][A-Za-z0-9._+-]*$",
    "a catalog id such as H100-SXM5-80GB or a MIG profile such as 1g.10gb",
    64,
)
"""A catalog GPU id or alias, or a MIG profile: node labels, mig-parted configs, Kueue flavors."""

_AWSNAME = Grammar(
    "AWS identifier",
    r"[A-Za-z0-9._:/-]",
    "letters, digits and '.', '_', ':', '/', '-'",
    r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$",
    "an AWS identifier such as p5.48xlarge, us-east-1a or cr-0123456789abcdef0",
    255,
)
"""An AWS name or id (instance types, zones, regions, capacity reservations, placement groups, buckets, KMS keys)."""

_AWSACCOUNT = Grammar(
    "AWS account",
    r"[0-9]",
    "digits only: an account id is exactly 12 digits",
    r"^[0-9]{12}$",
    "12 digits, quoted, such as '123456789012'",
    12,
)
"""An AWS account id: exactly 12 digits."""


_EMAIL = Grammar(
    "email address",
    r"[A-Za-z0-9.@_+-]",
    "letters, digits and '.', '@', '_', '+', '-'",
    r"^[A-Za-z0-9._+-]+@[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$",
    "an address such as ml-oncall@acme.example",
    254,
)
"""An email address: Alertmanager's email receiver (to, from) in the kube-prometheus-stack values."""

_HOSTPORT = Grammar(
    "host:port",
    r"[A-Za-z0-9.:-]",
    "letters, digits and '.', ':', '-'",
    r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:[0-9]{1,5}$",
    "an SMTP server such as smtp.acme.example:587",
    260,
)
"""A server and its port: Alertmanager's email smarthost."""

_SLACKCHANNEL = Grammar(
    "Slack channel",
    r"[#@a-z0-9._-]",
    "lowercase letters, digits and '#', '@', '.', '_', '-'",
    r"^[#@]?[a-z0-9][a-z0-9._-]*$",
    "a channel such as #ml-alerts",
    80,
)
"""A Slack channel name (lowercase, no spaces): Alertmanager's slack receiver."""

_SECRETKEY = Grammar(
    "Secret key",
    r"[-._a-zA-Z0-9]",
    "letters, digits and '-', '.', '_'",
    r"^[._a-zA-Z0-9][-._a-zA-Z0-9]*$",
    "a key of a Kubernetes Secret such as routing-key",
    253,
)
"""A data key of a Kubernetes Secret (the API's own key grammar): mounted as a file name by Alertmanager."""

_FINGERPRINT = Grammar(
    "OpenPGP key fingerprint",
    r"[0-9A-Fa-f]",
    "hex digits, no spaces",
    r"^[0-9A-Fa-f]{40}([0-9A-Fa-f]{24})?$",
    "the 40 hex digits gpg --show-keys prints (64 for a version 6 key)",
    64,
)
"""The full fingerprint of a repository signing key: the roles install the key only when it has it."""

_RDMADEVICE = Grammar(
    "RDMA device",
    r"[A-Za-z0-9_.-]",
    "letters, digits and '_', '.', '-'",
    r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$",
    "an RDMA device name as /sys/class/infiniband lists it, such as ibp24s0 (named by PCI address by the rdma role)",
    63,
)
"""An RDMA device's name (the kernel's IB_DEVICE_NAME_MAX, 64 with the NUL): the node exporter's ``device`` label."""

_PCIADDRESS = Grammar(
    "PCI address",
    r"[0-9A-Fa-f:.]",
    "hex digits and ':', '.'",
    r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$",
    "a domain:bus:device.function address such as 0000:1a:00.0 (lspci -D)",
    12,
)
"""The PCI address of a device, as sysfs and lspci -D write it."""


# the types the spec models use (module-level aliases, so type checkers see a str)
MountPath = Annotated[str, _MOUNTPATH.validator, _MOUNTPATH.json]
ServerPath = Annotated[str, _SERVERPATH.validator, _SERVERPATH.json]
Host = Annotated[str, _HOST.validator, _HOST.json]
NidList = Annotated[str, _NIDLIST.validator, _NIDLIST.json]
FsName = Annotated[str, _FSNAME.validator, _FSNAME.json]
MountOption = Annotated[str, _MOUNTOPTION.validator, _MOUNTOPTION.json]
LnetRoute = Annotated[str, LNET_ROUTE.validator, LNET_ROUTE.json]
Url = Annotated[str, _URL.validator, _URL.json]
KeyFingerprint = Annotated[str, _FINGERPRINT.validator, _FINGERPRINT.json]
PciAddress = Annotated[str, _PCIADDRESS.validator, _PCIADDRESS.json]
RdmaDevice = Annotated[str, _RDMADEVICE.validator, _RDMADEVICE.json]
ApiEndpoint = Annotated[str, _APIENDPOINT.validator, _APIENDPOINT.json]
GitUrl = Annotated[str, _GITURL.validator, _GITURL.json]
GitRevision = Annotated[str, _GITREVISION.validator, _GITREVISION.json]
RepoPath = Annotated[str, _REPOPATH.validator, _REPOPATH.json]
SecretName = Annotated[str, _SECRETNAME.validator, _SECRETNAME.json]
Version = Annotated[str, _VERSION.validator, _VERSION.json]
Identifier = Annotated[str, _IDENTIFIER.validator, _IDENTIFIER.json]
Interface = Annotated[str, _INTERFACE.validator, _INTERFACE.json]
Device = Annotated[str, _DEVICE.validator, _DEVICE.json]
Word = Annotated[str, _WORD.validator, _WORD.json]
CatalogId = Annotated[str, _CATALOGID.validator, _CATALOGID.json]
AwsName = Annotated[str, _AWSNAME.validator, _AWSNAME.json]
AwsAccount = Annotated[str, _AWSACCOUNT.validator, _AWSACCOUNT.json]
Email = Annotated[str, _EMAIL.validator, _EMAIL.json]
HostPort = Annotated[str, _HOSTPORT.validator, _HOSTPORT.json]
SlackChannel = Annotated[str, _SLACKCHANNEL.validator, _SLACKCHANNEL.json]
SecretKeyName = Annotated[str, _SECRETKEY.validator, _SECRETKEY.json]
ObjectPrefix = Annotated[str, _OBJECTPREFIX.validator, _OBJECTPREFIX.json]

GRAMMARS: dict[str, Grammar] = {
    "MountPath": _MOUNTPATH,
    "ServerPath": _SERVERPATH,
    "Host": _HOST,
    "NidList": _NIDLIST,
    "FsName": _FSNAME,
    "MountOption": _MOUNTOPTION,
    "LnetRoute": LNET_ROUTE,
    "Url": _URL,
    "ApiEndpoint": _APIENDPOINT,
    "GitUrl": _GITURL,
    "GitRevision": _GITREVISION,
    "RepoPath": _REPOPATH,
    "SecretName": _SECRETNAME,
    "Version": _VERSION,
    "Identifier": _IDENTIFIER,
    "Interface": _INTERFACE,
    "Device": _DEVICE,
    "Word": _WORD,
    "CatalogId": _CATALOGID,
    "AwsName": _AWSNAME,
    "AwsAccount": _AWSACCOUNT,
    "Email": _EMAIL,
    "HostPort": _HOSTPORT,
    "SlackChannel": _SLACKCHANNEL,
    "SecretKeyName": _SECRETKEY,
    "ObjectPrefix": _OBJECTPREFIX,
    "KeyFingerprint": _FINGERPRINT,
    "PciAddress": _PCIADDRESS,
    "RdmaDevice": _RDMADEVICE,
}
"""Every grammar by the name of its type (tests and docs list them)."""


CONFIG_WORD = re.compile(r"[A-Za-z0-9._@:/=+,~-]+")
"""One field of a line-oriented config file (fstab, modprobe.d, a BeeGFS config): nothing that ends the
field (whitespace), the line (a line break), the value (a quote) or starts a comment ('#')."""


def config_word(value: str, what: str) -> str:
    """``value`` when it is one inert field of a config line; raises ValueError otherwise (the writers'
    own check, after validate's: a value that got past it is refused rather than written)."""
    if not CONFIG_WORD.fullmatch(value) or "{" in value or ".." in value.split("/"):
        raise ValueError(f'{what} "{escaped(value)}" would not stay one field of its config line; refusing to write it')
    return value
