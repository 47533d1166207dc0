"""Identifiers out of bundle text: one mapping for a whole cluster, kept in a map file the user holds.

Two passes.  ``Redactor.learn`` reads every file first and collects the identifiers that are known only
by where they stand (host names in meta.env, nccl-tests rank lines, NCCL log prefixes, mpirun host lists,
syslog headers, Slurm ``Nodes=`` lists and kubectl hostname labels; cluster, instance-group and
placement-group names; account ids met inside ARNs and after account keys; bucket names; user names;
GPU serials for ``--mask-serials``).  Those are then masked wherever they appear, in any case.  ``Redactor.apply`` then replaces, in one regex pass
per text, those known values and everything a pattern recognises anywhere (IPv4/IPv6, MAC, EC2 ids,
ARNs, AWS resource ids, S3 buckets, e-mail addresses, home-directory user names, ``ip-a-b-c-d`` host
names).  The same value gets the same token in every file of every bundle, and a token keeps the shape
of its value, so the parsers read redacted bundles as they read the originals:

>>> r = Redactor()
>>> r.learn("hostname=gpu-a17.corp.example.com\\n", "meta.env")
>>> r.apply("ssh gpu-a17 10.1.2.3 ip-10-1-2-3.ec2.internal i-0abc123def4567890 user@example.com")
'ssh host-0001 198.18.0.1 ip-198-18-0-1.ec2.internal i-00000000000000001 user-0001@example.com'
>>> r.apply("GPU-5f1ab0c2-9d1e-4c4a-8e1f-2b3c4d5e6f70 fs-0123456789abcdef0 arn:aws:iam::123456789012:role/x")
'GPU-5f1ab0c2-9d1e-4c4a-8e1f-2b3c4d5e6f70 fs-00000000000000001 arn:aws:iam::000000000001:role/arn-0001'

``CATEGORIES`` is the one list of what is covered (docs/security.md is generated from it, and the
collector's ``--redact`` names its categories from it).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from parsers._text import clean_head

MAP_VERSION = 1


@dataclass(frozen=True)
class Category:
    name: str
    what: str
    token: str  # what a value becomes (its shape)
    by_default: bool = True


CATEGORIES: tuple[Category, ...] = (
    Category("hostname", "host names: FQDN and short name of every host named in meta.env, nccl-tests "
             "rank and log lines, mpirun -H lists and hostfiles, syslog headers, uname -a, Slurm Nodes= "
             "lists, kubectl hostname labels, single-label URL hosts; then wherever the name appears, in "
             "any case, also glued to other words by - _ or . (gpu-a17-ib0)", "host-0001"),
    Category("domain", "the domain of a redacted FQDN, also where it stands alone (generic ones such as "
             "ec2.internal are kept)",
             "domain-0001.internal"),
    Category("ec2_hostname", "ip-a-b-c-d host names (and ip-a-b-c-d.<region>.compute.internal): follow the "
             "ipv4 mapping", "ip-198-18-0-1"),
    Category("ipv4", "IPv4 addresses (loopback, link-local, 0.0.0.0 and broadcast kept)", "198.18.0.1"),
    Category("ipv6", "IPv6 addresses (::1 and :: kept)", "fd00::1"),
    Category("mac", "MAC addresses (colon or dash separated) and 20-byte InfiniBand hardware addresses",
             "02:00:00:00:00:01"),
    Category("instance_id", "EC2 instance ids", "i-00000000000000001"),
    Category("aws_resource_id", "FSx, EBS volume and snapshot, ENI, subnet, VPC, security-group, AMI, "
             "placement-group and other <prefix>-<hex> AWS ids", "fs-00000000000000001"),
    Category("account_id", "AWS account ids: inside ARNs and ECR registry names, after account/owner keys "
             "(AWS_ACCOUNT_ID=, \"OwnerId\":, Account ID), and then wherever the same number appears",
             "000000000001"),
    Category("arn", "ARNs: account id and resource masked, partition, service and region kept",
             "arn:aws:iam::000000000001:role/arn-0001"),
    Category("s3_bucket", "S3 bucket names in s3:// URLs, virtual-host and path-style URLs, ARNs and "
             "BucketName keys, and then wherever the same name appears", "bucket-0001"),
    Category("cluster", "cluster, instance-group and placement-group names from meta.env (cluster, "
             "instance_group, placement_group), IMDS placement/group-name, sagemaker.amazonaws.com/*-name "
             "labels, ClusterName / InstanceGroupName keys and CloudWatch dimensions; then wherever they "
             "appear", "cluster-0001"),
    Category("user", "user names in home paths (/home/NAME, /Users/NAME, ~NAME), Slurm UserId=NAME(uid) and "
             "USER= / LOGNAME= / SLURM_JOB_USER= (generic accounts such as ubuntu, ec2-user, root kept)",
             "user-0001"),
    Category("email", "e-mail addresses", "user-0001@example.com"),
    Category("gpu_serial", "GPU UUIDs and serial numbers (kept unless --mask-serials: support needs them)",
             "GPU-00000000-0000-0000-0000-000000000001", by_default=False),
)  # fmt: skip

#: Domains that name no one: kept on a redacted FQDN.
GENERIC_DOMAINS = ("ec2.internal", "compute.internal", "cluster.local", "localdomain", "local", "internal")
#: Accounts that name no one (every AMI has them): not masked, so "ubuntu" in an OS name stays.
GENERIC_USERS = frozenset((
    "root", "ubuntu", "ec2-user", "centos", "admin", "rocky", "fedora", "debian", "slurm", "nobody", "munge",
    "user", "users", "shared",
))  # fmt: skip

# Boundaries: an identifier may be glued to other words by "-", "_" or "." (hyperpod-i-0abc..., node_10.1.2.3.log)
_IP4 = r"(?<![A-Za-z0-9.])(?:\d{1,3}\.){3}\d{1,3}(?![A-Za-z0-9]|\.\d)"
_IP6 = r"(?<![\w.])(?=[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:)[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:]|\.\d)"
_MAC = r"(?<![\w:-])[0-9A-Fa-f]{2}(?:(?P<sep>[:-])[0-9A-Fa-f]{2})(?:(?P=sep)[0-9A-Fa-f]{2}){4}(?![\w:-])"
_IB_HW = r"(?<![\w:])[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){19}(?![\w:])"
_EC2_HOST = r"(?<![A-Za-z])(?i:ip)-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})(?![A-Za-z0-9]|-\d)"
_INSTANCE = r"(?<![A-Za-z0-9])i-(?:[0-9a-f]{17}|[0-9a-f]{8})(?![A-Za-z0-9])"
_RESOURCE = (
    r"(?<![A-Za-z0-9])(?:fs|fsvol|vol|snap|eni|subnet|vpc|sg|ami|pg|rtb|igw|nat|elb|efs|fc|lt|tgw|vpce|"
    r"eipalloc|cr|dopt|acl|r)-(?:[0-9a-f]{17}|[0-9a-f]{8})(?![A-Za-z0-9])"
)
_ARN = r"\barn:(aws[\w-]*):([\w-]+):([\w-]*):(\d{12})?:([^\s\"',;)}\]]+)"
_S3 = (
    r"(?:\bs3://|\bs3a://)([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])"
    r"|\bhttps?://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\.s3[.-](?:[\w-]+\.)?amazonaws\.com"
    r"|\bhttps?://s3[.-](?:[\w-]+\.)?amazonaws\.com/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])"
    r"|\barn:aws[\w-]*:s3:::([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])"
)
_ACCOUNT_CONTEXT = (
    r"(?i:\b(?:aws[_-]?)?(?:account|owner)(?:[_ -]?id)?\b[\"']?\s*[:=]?\s*[\"']?)(\d{12})(?!\d)"
)
_ECR = r"(?<!\d)(\d{12})(?=\.dkr\.ecr\.)"
_EMAIL = r"(?<![\w.+-])[\w.+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?![\w-])"
_HOME = r"(/(?:home|Users)/|(?<![\w/~])~(?=[A-Za-z_][\w.-]{0,31}/))([A-Za-z_][\w.-]{0,31})(?=/|\b)"
_GPU_UUID = r"\b(?:GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"

_HOSTFILE = re.compile(r"^(?P<h>[A-Za-z][\w.-]*)\s+(?:slots|max[_-]slots)=\d+", re.M | re.A)

#: Where a host name stands (learn pass): group "h" is the name.
_HOST_PLACES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (  # (pattern, words it needs)
    (
        re.compile(
            r"^(?:hostname|node|host|nodename|host_short|slurmd_nodename)=(?P<h>[\w.-]+)\s*$",
            re.M | re.I | re.A,
        ),
        ("=",),
    ),
    (
        re.compile(r"\bRank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<h>[\w.-]+)\s+device", re.A),
        ("Rank",),
    ),
    (re.compile(r"^(?:\S+\s+)?(?P<h>[A-Za-z][\w.-]*):\d+:\d+\s+\[\d+\]\s+NCCL\s", re.M | re.A), ("NCCL",)),
    (
        re.compile(  # syslog / journal lines: "<stamp> HOST ident[pid]:" (short, short-iso, short-precise)
            r"^(?:\w{3}\s+\d+\s+\d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT[\d:.,]+(?:Z|[+-]\d\d:?\d\d)?)"
            r"\s+(?P<h>[A-Za-z][\w.-]*)\s+[\w./@-]+(?:\[\d+\])?:",
            re.M | re.A,
        ),
        (":",),
    ),
    (
        re.compile(r"kubernetes\.io/hostname[\"']?\s*[:=]\s*[\"']?(?P<h>[\w.-]+)", re.A),
        ("kubernetes.io/hostname",),
    ),
    (
        re.compile(r"^\s*(?:Name|Hostname|InternalDNS|ExternalDNS):\s+(?P<h>[\w.-]+)\s*$", re.M | re.A),
        ("Name:", "DNS:"),
    ),
    (re.compile(r"\"nodename\":\s*\"(?P<h>[\w.-]+)\"", re.A), ('"nodename"',)),
    (re.compile(r"^Linux \S+ \((?P<h>[\w.-]+)\)", re.M | re.A), ("Linux ",)),  # sysstat header
    # uname -a, alone or as the bug report's "uname: Linux HOST ..." line
    (re.compile(r"^(?:uname:\s+)?Linux (?P<h>[A-Za-z][\w.-]*) \d+\.\d+", re.M | re.A), ("Linux ",)),
    (_HOSTFILE, ("slots=",)),
)
#: Files whose content is the host name alone (sos copies /etc/hostname and writes sos_commands/host/hostname;
#: the HyperPod issue report writes hostname.txt; the EKS log collector system/hostname.txt)
_HOSTNAME_FILES = frozenset({"hostname", "hostname.txt", "hostname.log"})
_USER_PLACES = re.compile(
    r"\bUserId=(?P<u>[A-Za-z_][\w.-]*)\(\d+\)|^(?:export\s+)?(?:USER|LOGNAME|SLURM_JOB_USER)=(?P<v>[A-Za-z_][\w.-]*)$",
    re.M | re.A,
)
_MPI_HOSTS = re.compile(r"(?:^|\s)(?:-H|-host|--host)[\s=]+([\w.:,-]+)", re.A)
_URL_HOST = re.compile(r"\bhttps?://(?P<h>[A-Za-z][\w-]*)(?=[:/]|\s|$)", re.M | re.A)
_BUCKET_KEY = re.compile(
    r"(?:(?i:\bBucket(?:Name)?\b)[\"']?\s*[:=]\s*[\"']?|\"Name\":\s*\"BucketName\",\s*\"Value\":\s*\")"
    r"(?P<b>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\b",
    re.A,
)
_ARN_RE, _S3_RE, _HOME_RE = re.compile(_ARN, re.A), re.compile(_S3, re.A), re.compile(_HOME, re.A)
_ACCOUNT_KEY_RE = re.compile(  # _ACCOUNT_CONTEXT on lower-cased text, led by a word so the scan is quick
    r"(?:account|owner)(?:[_ -]?id)?\b[\"']?\s*[:=]?\s*[\"']?(\d{12})(?!\d)",
    re.A,
)
_ECR_RE = re.compile(_ECR, re.A)
_SLURM_NODES = re.compile(r"\b(Nodes|NodeName|NodeList|NodeHostName|NodeAddr)=([^\s#]+)", re.A)
_CLUSTER_KEYS = re.compile(
    r"^(?:cluster|cluster_name|instance_group|instance_group_name|placement_group)=(?P<v>.+?)\s*$", re.M
)
_NAME_KEYS = re.compile(  # IMDS, kubectl labels, CloudWatch dimensions (Key=Value and {"Name":, "Value":})
    r"(?:placement/group-name=|sagemaker\.amazonaws\.com/(?:cluster|instance-group)-name[\"']?\s*[:=]\s*[\"']?"
    r"|\b(?:ClusterName|InstanceGroupName|cluster_name)[\"']?\s*[:=]\s*[\"']?"
    r"|\"Name\":\s*\"(?:ClusterName|InstanceGroupName)\",\s*\"Value\":\s*\")"
    r"(?P<v>[\w.-]{3,})",
    re.A,
)
_SERIAL = re.compile(r"^\s*Serial Number\s*:\s*(?P<v>\d{6,})\s*$", re.M | re.A)
_KEEP_IP4 = ("0.0.0.0", "255.255.255.255")


@dataclass
class Redactor:
    """The map from original values to tokens, per category, and the rules that fill it."""

    mask_serials: bool = False
    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # values replaced in the last apply(), per category
    _literals: dict[str, tuple[str, str]] = field(default_factory=dict)  # lower-case -> (category, value)
    _pattern: re.Pattern[str] | None = None

    # -- the map --------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, mask_serials: bool = False) -> Redactor:
        """A redactor that goes on with the map of an earlier run (so old and new bundles line up)."""
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("version") != MAP_VERSION or not isinstance(doc.get("maps"), dict):
            raise ValueError(f"{path} is not an hptriage redaction map (version {MAP_VERSION})")
        r = cls(mask_serials=mask_serials, maps={k: dict(v) for k, v in doc["maps"].items()})
        for category in ("hostname", "domain", "cluster", "gpu_serial", "account_id", "user", "s3_bucket"):
            for value in r.maps.get(category, {}):
                r._literal(value, category)
        return r

    def save(self, path: Path) -> None:
        doc = {
            "version": MAP_VERSION,
            "note": "original value -> token, per category; keep this file private: it undoes the redaction",
            "maps": {k: dict(sorted(v.items())) for k, v in sorted(self.maps.items()) if v},
        }
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")

    def token(self, category: str, value: str, make: Callable[[int], str]) -> str:
        """The token of a value, made on first sight (the n-th value of a category gets number n)."""
        table = self.maps.setdefault(category, {})
        if value not in table:
            table[value] = make(len(table) + 1)
        self.counts[category] = self.counts.get(category, 0) + 1
        return table[value]

    # -- pass 1: learn the values known by where they stand --------------------------------------------
    def learn(self, text: str, name: str = "") -> None:
        base = name.replace("\\", "/").rsplit("/", 1)[-1].rsplit("!", 1)[-1].lower()
        if base in _HOSTNAME_FILES:  # a file holding only the host name (sos, the HyperPod issue report)
            first = text.strip().splitlines()[0].strip() if text.strip() else ""
            if re.fullmatch(r"[A-Za-z][\w.-]{1,252}", first):
                self._host(first)
        for pattern, needles in _HOST_PLACES:
            for m in _where(pattern, text, *needles):
                self._host(m.group("h"))
        tags = clean_head(text).hosts  # pdsh / clush "host: line" tags (srun ranks are numbers)
        for tag in set(tags or ()):
            if tag and not tag.isdigit() and "/" not in tag and "," not in tag:
                self._host(tag)
        # each search below runs only where a word it needs is in the text (a kernel log has none)
        lower = text.lower()
        for m in _where(_SLURM_NODES, text, "Node"):
            for host in _expand(m.group(2)):
                self._host(host)
        for m in _where(_MPI_HOSTS, text, "-H", "-host"):  # mpirun -H a:8,b:8
            for host in m.group(1).split(","):
                self._host(host.partition(":")[0])
        for m in _where(_URL_HOST, text, "://"):  # http://gpu-v55:8080/ (a dotted name may be anyone's site)
            self._host(m.group("h"))
        for m in _where(_USER_PLACES, text, "UserId=", "USER=", "LOGNAME="):
            self._user(m.group("u") or m.group("v"))
        if name.endswith("meta.env"):
            for m in _CLUSTER_KEYS.finditer(text):
                if m.group("v").strip():
                    self._literal(m.group("v").strip(), "cluster")
        for m in _where(
            _NAME_KEYS, text, "group-name", "cluster-name", "ClusterName", "GroupName", "cluster_name"
        ):
            self._literal(m.group("v"), "cluster")  # IMDS, kubectl and CloudWatch forms of the same names
        for m in _where(_ARN_RE, text, "arn:"):
            if m.group(4):
                self._literal(m.group(4), "account_id")
        for m in _where(_ACCOUNT_KEY_RE, lower, "account", "owner"):
            self._literal(m.group(1), "account_id")
        for m in _where(_ECR_RE, text, ".dkr.ecr."):
            self._literal(m.group(1), "account_id")
        for m in _where(_HOME_RE, text, "/home/", "/Users/", "~"):
            self._user(m.group(2))
        for m in _where(_S3_RE, lower, "s3"):
            self._literal(next(g for g in m.groups() if g), "s3_bucket")
        for m in _where(_BUCKET_KEY, text, "ucket"):
            self._literal(m.group("b"), "s3_bucket")
        if self.mask_serials:
            for m in _SERIAL.finditer(text):
                self._literal(m.group("v"), "gpu_serial")
            for m in re.finditer(r"(?im)^.*\bserial\b.*$", text[:4096]):  # a CSV header naming a serial
                self._csv_serials(text, m.group(0))

    def _host(self, host: str) -> None:
        host = host.strip(".").lower() if host else ""
        # a host named like the kernel ("linux", a live image's default) would mask "Linux" in every
        # banner and uname line and break what reads them: such a name identifies nobody
        if len(host) < 2 or re.fullmatch(r"[\d.]+|localhost|none|unknown|null|-|linux|gnu", host):
            return
        if re.match(_EC2_HOST, host):
            return  # follows the ipv4 mapping
        self._literal(host, "hostname")
        short, _, domain = host.partition(".")
        if domain and len(short) >= 2:
            self._literal(short, "hostname")
        if len(domain) >= 3 and not _generic_domain(domain):  # "search corp.example.com" alone too
            self._literal(domain, "domain")

    def _user(self, user: str) -> None:
        if len(user) >= 3 and user.lower() not in GENERIC_USERS:  # shorter: masked in home paths only
            self._literal(user, "user")

    def _literal(self, value: str, category: str) -> None:
        """A value masked wherever it appears, in any case (the first spelling met is the one mapped)."""
        key = value.lower()
        if value and key not in self._literals:
            self._literals[key] = (category, value)
            self._pattern = None

    def _csv_serials(self, text: str, header: str) -> None:
        cells = [c.strip().lower() for c in header.split(",")]
        at = [i for i, c in enumerate(cells) if c == "serial" or c.startswith("serial ")]
        if not at or len(cells) < 2:
            return
        for line in text.splitlines():
            parts = [c.strip() for c in line.split(",")]
            if len(parts) == len(cells) and re.fullmatch(r"\d{6,}", parts[at[0]]):
                self._literal(parts[at[0]], "gpu_serial")

    # -- pass 2: replace ---------------------------------------------------------------------------------
    def apply(self, text: str) -> str:
        """The text with every covered identifier replaced by its token."""
        if self._pattern is None:
            self._pattern = self._compile()
        return self._pattern.sub(self._replace, text)

    def apply_name(self, name: str) -> str:
        """A file or folder name redacted (``nccl-allreduce-gpu-a17-gpu-b22.txt``): as text."""
        return self.apply(name)

    def _compile(self) -> re.Pattern[str]:
        # Each alternative behind a one-character look at where it can start, and the whole behind one
        # test that rejects positions inside words (every identifier starts a word or a path): a scan
        # then costs about what one pattern does, not the sum of them.
        parts = [rf"(?=a)(?P<arn>{_ARN})", rf"(?=[sha])(?P<s3>{_S3})", rf"(?=[\w.+-]+@)(?P<email>{_EMAIL})"]
        if (
            self._literals
        ):  # glued by - _ . to other words counts; "p5" in p5.48xlarge (followed by .digit) not
            alternatives = trie_pattern(self._literals)
            parts.append(rf"(?P<literal>(?<![A-Za-z0-9])(?i:{alternatives})(?![A-Za-z0-9]|\.\d))")
        parts += [
            rf"(?=[/~])(?P<home>{_HOME})",
            rf"(?=[iI])(?P<ec2host>{_EC2_HOST})",
            rf"(?=\d)(?P<ip4>{_IP4})",
            rf"(?=[0-9A-Fa-f:])(?:(?P<ibhw>{_IB_HW})|(?P<mac>{_MAC})|(?P<ip6>{_IP6}))",
            rf"(?=i-)(?P<instance>{_INSTANCE})",
            rf"(?=[a-z]+-[0-9a-f])(?P<resource>{_RESOURCE})",
            rf"(?=[aAoO])(?P<account>{_ACCOUNT_CONTEXT})",
        ]
        if self.mask_serials:
            parts.append(rf"(?=[GM])(?P<uuid>{_GPU_UUID})")
        # ASCII classes: every identifier is ASCII, and a byte past 127 (text is read as latin-1) ends a word
        # an ip-a-b-c-d name may follow a digit: a log stamp glued to the host ("...-07:00ip-10-1-2-3:79")
        start = r"(?:(?<![A-Za-z0-9])|(?=/)|(?<=\d)(?=[iI][pP]-\d))"
        return re.compile(start + "(?:" + "|".join(parts) + ")", re.ASCII)

    def _replace(self, m: re.Match[str]) -> str:
        kind = m.lastgroup
        text = m.group(0)
        if kind == "literal":
            return self._known(text)
        if kind == "ec2host":
            self.counts["ec2_hostname"] = self.counts.get("ec2_hostname", 0) + 1
            return "ip-" + self._ip4(".".join(text[3:].split("-"))).replace(".", "-")
        if kind == "ip4":
            return self._ip4(text)
        if kind == "ip6":
            return self._ip6(text)
        if kind == "mac":
            sep = text[2]
            token = self.token(
                "mac",
                text.lower().replace("-", ":"),
                lambda n: "02:00:" + ":".join(f"{n:08x}"[i : i + 2] for i in range(0, 8, 2)),
            )
            return token.replace(":", sep)
        if kind == "ibhw":  # the QPN bytes and subnet prefix say nothing; the port GUID (last 8) is masked
            return text[:36] + self.token(
                "mac", text[36:].lower(), lambda n: ":".join(f"{n:016x}"[i : i + 2] for i in range(0, 16, 2))
            )
        if kind == "instance":
            width = len(text) - 2
            return self.token("instance_id", text, lambda n: f"i-{n:0{width}x}")
        if kind == "resource":
            prefix, _, rest = text.partition("-")
            return self.token("aws_resource_id", text, lambda n: f"{prefix}-{n:0{len(rest)}x}")
        if kind == "arn":
            return self._arn(text)
        if kind == "s3":
            return self._s3(text)
        if kind == "email":
            return self.token("email", text.lower(), lambda n: f"user-{n:04d}@example.com")
        if kind == "home":
            cut = 1 if text.startswith("~") else text.rindex("/") + 1
            head, user = text[:cut], text[cut:]
            if user.lower() in GENERIC_USERS:
                return text
            known = self._literals.get(user.lower())
            return head + self.token("user", known[1] if known else user, lambda n: f"user-{n:04d}")
        if kind == "account":
            digits = text[-12:]
            return text[:-12] + self._account(digits)
        if kind == "uuid":
            head = text[:4]
            return self.token("gpu_serial", text, lambda n: f"{head}00000000-0000-0000-0000-{n:012x}")
        return text

    def _known(self, text: str) -> str:
        category, value = self._literals.get(text.lower(), ("hostname", text))
        if category == "hostname":
            return self._hostname(value.lower())
        if category == "domain":
            return self._domain(value.lower())
        if category == "s3_bucket":
            return self.token("s3_bucket", value, lambda n: f"bucket-{n:04d}")
        if category == "cluster":
            return self.token("cluster", value, lambda n: f"cluster-{n:04d}")
        if category == "account_id":
            return self._account(value)
        if category == "user":
            return self.token("user", value, lambda n: f"user-{n:04d}")
        if category == "gpu_serial":
            return self.token("gpu_serial", value, lambda n: f"{n:0{len(value)}d}")
        return value

    def _hostname(self, host: str) -> str:
        short, dot, domain = host.partition(".")
        token = self.token("hostname", short, lambda n: f"host-{n:04d}")
        if not dot:
            return token
        return f"{token}.{self._domain(domain)}"

    def _domain(self, domain: str) -> str:
        if _generic_domain(domain):
            return domain
        return self.token("domain", domain, lambda n: f"domain-{n:04d}.internal")

    def _ip4(self, text: str) -> str:
        try:
            address = ipaddress.IPv4Address(text)
        except ValueError:
            return text  # 999.1.2.3: a version number or some other dotted thing, not an address
        if address.is_loopback or address.is_link_local or text in _KEEP_IP4 or address.is_multicast:
            return text
        return self.token("ipv4", str(address), lambda n: f"198.18.{(n >> 8) & 255}.{n & 255}")

    def _ip6(self, text: str) -> str:
        if text.startswith(":") and not text.startswith("::"):  # "eth1:2600:1f18:...": the colon is no part
            return ":" + self._ip6(text[1:])
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            return text
        if address.is_loopback or address.is_unspecified:
            return text
        return self.token("ipv6", str(address), lambda n: f"fd00::{n:x}")

    def _account(self, digits: str) -> str:
        return self.token("account_id", digits, lambda n: f"{n:012d}")

    def _arn(self, text: str) -> str:
        m = re.match(_ARN, text)
        assert m is not None
        partition, service, region, account, resource = m.groups()
        if service == "s3" and not account:
            bucket, slash, rest = resource.partition("/")
            masked = (
                self.token("s3_bucket", bucket, lambda n: f"bucket-{n:04d}")
                + slash
                + ("object" if rest else "")
            )
        else:
            kind = re.match(r"[\w-]+[/:]", resource)
            masked = (kind.group(0) if kind else "") + self.token("arn", resource, lambda n: f"arn-{n:04d}")
        return f"arn:{partition}:{service}:{region}:{self._account(account) if account else ''}:{masked}"

    def _s3(self, text: str) -> str:
        m = re.match(_S3, text)
        assert m is not None
        bucket = next(g for g in m.groups() if g)
        token = self.token("s3_bucket", bucket, lambda n: f"bucket-{n:04d}")
        return text.replace(bucket, token, 1)


def _where(pattern: re.Pattern[str], text: str, *needles: str) -> Iterator[re.Match[str]]:
    """The matches of pattern, searched only when the text holds one of the needles it cannot match without."""
    return pattern.finditer(text) if any(n in text for n in needles) else iter(())


def trie_pattern(words: Iterable[str]) -> str:
    """One regex for many literal words, factored by common prefix, longest match first: a flat
    alternation of a thousand host names costs seconds a megabyte, this costs what one word does.

    >>> print(trie_pattern(["gpu-1", "gpu-12", "gpu-2"]))
    gpu\\-(?:1(?:2)?|2)
    """
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


def _generic_domain(domain: str) -> bool:
    return any(domain == g or domain.endswith("." + g) for g in GENERIC_DOMAINS)


def _expand(expression: str) -> list[str]:
    """A Slurm host list as names (``ip-10-1-[2-3],gpu1`` -> 3 names); the expression itself when it
    does not expand."""
    try:
        import hostlist

        return list(hostlist.expand_hostlist(expression))
    except Exception:  # not a host list (a switch name, garbage): keep what is there
        return [expression]


def expand_slurm_lists(text: str) -> str:
    """``Nodes=ip-10-1-[2-3]`` -> ``Nodes=ip-10-1-2,ip-10-1-3``: a host-list expression cannot be masked
    in place, so it is written out name by name (a comma list is valid Slurm syntax) before the text is
    redacted, and each name is then masked like any other.

    >>> expand_slurm_lists("SwitchName=s1 Nodes=gpu[1-3],cpu9")
    'SwitchName=s1 Nodes=gpu1,gpu2,gpu3,cpu9'
    """

    def one(m: re.Match[str]) -> str:
        names = _expand(m.group(2))
        return m.group(0) if names == [m.group(2)] else f"{m.group(1)}=" + ",".join(names)

    return _SLURM_NODES.sub(one, text)


def categories_table() -> str:
    """The Markdown table of docs/security.md's "What redaction covers" section."""
    rows = ["| category | what | becomes | default |", "|---|---|---|---|"]
    for c in CATEGORIES:
        rows.append(f"| `{c.name}` | {c.what} | `{c.token}` | {'masked' if c.by_default else 'kept'} |")
    return "\n".join(rows)


def summary(counts: dict[str, int], maps: dict[str, dict[str, str]]) -> str:
    """redaction.txt: categories and counts, never an original value."""
    lines = [
        "# hptriage redact: what was masked in this bundle (original values are only in the map file",
        "# the person who redacted it keeps; none is written here)",
        "# category<TAB>replacements in this bundle<TAB>distinct values in the map<TAB>becomes",
    ]
    for c in CATEGORIES:
        lines.append(f"{c.name}\t{counts.get(c.name, 0)}\t{len(maps.get(c.name, {}))}\t{c.token}")
    return "\n".join(lines) + "\n"


def write_categories_into(doc: Path) -> None:
    """Rewrite the generated categories table of docs/security.md (``python -m analyzer.redact.redactor``)."""
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split("<!-- categories:", 1)
    marker, _, rest = rest.partition("\n")
    _, _, tail = rest.partition("<!-- /categories -->")
    doc.write_text(
        f"{head}<!-- categories:{marker}\n{categories_table()}\n<!-- /categories -->{tail}", "utf-8"
    )


__all__ = [
    "CATEGORIES",
    "Redactor",
    "categories_table",
    "expand_slurm_lists",
    "summary",
    "trie_pattern",
    "write_categories_into",
]


if __name__ == "__main__":
    write_categories_into(Path(__file__).resolve().parent.parent / "docs" / "security.md")
