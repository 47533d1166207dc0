"""hptriage redact: nothing covered leaks, the redacted cluster analyzes to the same findings, the map
lines up later runs and never lands in OUT, manifests and .sha256 files match the redacted files."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.cli import cli
from analyzer.redact.redactor import CATEGORIES, Redactor
from tests.conftest import FIXTURES, ROOT, make_tar

_spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

SCENARIOS = sorted(p.parent.name for p in (ROOT / "sample_bundles").glob("*/bundle"))


def _redact(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["redact", *args])
    return result.exit_code, result.output


def _analyze(path: Path, out: Path) -> dict:
    result = CliRunner().invoke(cli, ["analyze", str(path), "--json", str(out), "-q", "--jobs", "1"])
    assert result.exit_code in (0, 5), result.output
    return json.loads(out.read_text())


def _all_bytes(root: Path) -> list[tuple[str, bytes]]:
    """Every file under root, tarballs and .gz opened (recursively), with its name path."""
    out: list[tuple[str, bytes]] = []

    def walk(name: str, data: bytes) -> None:
        out.append((name, data))
        if data[:2] == b"\x1f\x8b" or name.endswith((".tar", ".tar.gz", ".tgz")):
            try:
                with tarfile.open(fileobj=io.BytesIO(data)) as archive:
                    for info in archive:
                        if info.isfile():
                            walk(f"{name}!{info.name}", archive.extractfile(info).read())  # type: ignore[union-attr]
                return
            except tarfile.TarError:
                pass
            walk(name[:-3], gzip.decompress(data))

    for path in sorted(root.rglob("*")):
        if path.is_file():
            walk(str(path.relative_to(root)), path.read_bytes())
    return out


# --- a cluster with every covered category planted in every kind of file --------------------------

PLANTED = {
    "hostname": ["gpu-a17", "gpu-a17.corp.acme-ml.com", "gpu-b22", "trainer-west-3", "gpu-c7", "gpu-c7-hsn",
                 "fm-host-9"],
    "domain": ["corp.acme-ml.com"],
    "ec2_hostname": ["ip-10-7-3-41", "ip-10-7-3-42.ec2.internal"],
    "ipv4": ["10.7.3.41", "10.7.3.42", "172.31.9.200", "10.7.3.50"],
    "ipv6": ["fe80::1c2d:3eff:fe4f:5a6b", "2600:1f18:abcd:1200:9f4e:1a2b:3c4d:5e6f"],
    "mac": ["0a:1b:2c:3d:4e:5f", "06:AB:CD:EF:01:23"],
    "instance_id": ["i-0abc123def4567890", "i-0fedcba9876543210", "i-1a2b3c4d"],
    "aws_resource_id": ["fs-0123456789abcdef0", "subnet-0a1b2c3d4e5f60789", "vpc-0123abcd", "sg-0a1b2c3d",
                        "eni-0abcdef1234567890", "vol-0badc0ffee1234567"],
    "account_id": ["123456789012", "210987654321"],
    "arn": ["role/acme-hyperpod-exec", "file-system/fs-0123456789abcdef0"],
    "s3_bucket": ["acme-training-data", "acme-logs-prod"],
    "cluster": ["acme-train-west", "workers-p5-ondemand"],
    "user": ["jdoe", "mlops-svc"],
    "email": ["ml-ops@acme-ml.com", "jane.doe@acme-ml.com"],
}  # fmt: skip

META = """bundle_format=1
node={host}
hostname={fqdn}
collected_at=2026-12-01T08:00:00Z
collector_version=test
instance_type=p5.48xlarge
instance_id={iid}
availability_zone=us-east-1a
cluster=acme-train-west
instance_group=workers-p5-ondemand
"""

DMESG = """[    9.489106] ena 0000:00:05.0: ENA device version: 0.10
[    9.592094] ena 0000:00:05.0: Elastic Network Adapter (ENA) found at mem 80114000, mac addr 0a:1b:2c:3d:4e:5f
[   12.100000] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready fe80::1c2d:3eff:fe4f:5a6b
[   13.000000] mlx5_core 0000:a8:00.0 ens1f0np0: Link up 06:AB:CD:EF:01:23
Dec  2 11:49:53 {host} kernel: [  885.242168] NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x65:1457)
2026-12-02T11:50:01+0000 fm-host-9 nv-fabricmanager[2211]: fabric manager started
"""

NCCL = """# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   6899 on    gpu-a17 device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   6900 on    gpu-b22 device  0 [0000:04:00] NVIDIA H100 80GB HBM3
gpu-a17:6899:6899 [0] NCCL INFO Bootstrap : Using eth0:10.7.3.41<0>
gpu-b22:6900:6900 [0] NCCL INFO NET/Socket : Using [0]eth0:10.7.3.42<0> [1]eth1:2600:1f18:abcd:1200:9f4e:1a2b:3c4d:5e6f%eth1<0>
gpu-a17:6899:6899 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0 (ip-10-7-3-41, ip-10-7-3-42.ec2.internal)
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  8589934592    2147483648     float     sum      -1    49123  174.87  174.87      0    49001  175.30  175.30      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 174.9
"""

CLOUDWATCH = """{
    "Label": "DiskIopsUtilization",
    "Datapoints": [
        {"Timestamp": "2026-12-01T08:00:00Z", "Average": 91.0, "Unit": "Percent"}
    ],
    "ResourceArn": "arn:aws:fsx:us-east-1:123456789012:file-system/fs-0123456789abcdef0",
    "Role": "arn:aws:iam::210987654321:role/acme-hyperpod-exec",
    "Export": "s3://acme-training-data/cw/2026-12-01.json",
    "Logs": "https://acme-logs-prod.s3.us-east-1.amazonaws.com/run/1",
    "Network": {"SubnetId": "subnet-0a1b2c3d4e5f60789", "VpcId": "vpc-0123abcd", "SecurityGroup": "sg-0a1b2c3d",
                "NetworkInterface": "eni-0abcdef1234567890", "Volume": "vol-0badc0ffee1234567"},
    "Owner": {"AccountId": "123456789012", "Contact": "ml-ops@acme-ml.com", "Manager": "jane.doe@acme-ml.com"}
}
"""

KUBECTL = """Name:               gpu-b22
Roles:              <none>
Labels:             kubernetes.io/hostname=gpu-b22
                    node.kubernetes.io/instance-type=p5.48xlarge
                    topology.kubernetes.io/zone=us-east-1a
                    sagemaker.amazonaws.com/cluster-name=acme-train-west
ProviderID:         aws:///us-east-1a/i-0fedcba9876543210
Addresses:
  InternalIP:  172.31.9.200
  Hostname:    trainer-west-3
"""

TOPOLOGY = """# topology.conf of acme-train-west
SwitchName=spine Switches=leaf[1-2]
SwitchName=leaf1 Nodes=gpu-a17,gpu-b22
SwitchName=leaf2 Nodes=ip-10-7-3-[41-42],trainer-west-3
"""

SCRIPT = "python /home/jdoe/train.py --ckpt /Users/mlops-svc/ckpt i-1a2b3c4d\n"


def _planted_cluster(root: Path) -> Path:
    """Two node bundles (a directory and a tarball with its .sha256) and an extra/ folder."""
    cluster = root / "cluster"
    for host, fqdn, iid in (("gpu-a17", "gpu-a17.corp.acme-ml.com", "i-0abc123def4567890"),
                            ("gpu-b22", "gpu-b22", "i-0fedcba9876543210")):  # fmt: skip
        node = root / "nodes" / f"hptriage-{host}-20261201T080000Z"
        shutil.copytree(ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-01", node)
        (node / "meta.env").write_text(META.format(host=host, fqdn=fqdn, iid=iid))
        (node / "cmd" / "dmesg.txt").write_text(DMESG.format(host=host))
        (node / "cmd" / "placement.txt").write_text(KUBECTL)
        (node / "files" / "etc" / "slurm").mkdir(parents=True)
        (node / "files" / "etc" / "slurm" / "topology.conf").write_text(TOPOLOGY)
        (node / "cmd" / "notes.txt.gz").write_bytes(gzip.compress(SCRIPT.encode()))
        (node / "cmd" / "scontrol-show-node.txt").write_text(
            "NodeName=gpu-c7 Arch=x86_64 CoresPerSocket=48\n   NodeAddr=10.7.3.50 NodeHostName=gpu-c7-hsn\n"
        )
        manifest = (node / "manifest.tsv").read_text()
        (node / "manifest.tsv").write_text(
            manifest + f"cmd/placement.txt\tplacement\t0\t0.1\t1\t-\tkubectl describe node {host}\t-\n"
        )
    (cluster / "extra").mkdir(parents=True)
    shutil.copytree(
        root / "nodes" / "hptriage-gpu-a17-20261201T080000Z", cluster / "hptriage-gpu-a17-20261201T080000Z"
    )
    tarball = make_tar(
        root / "nodes" / "hptriage-gpu-b22-20261201T080000Z",
        cluster / "hptriage-gpu-b22-20261201T080000Z.tar.gz",
    )
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    (cluster / f"{tarball.name}.sha256").write_text(f"{digest}  {tarball.name}\n")
    (cluster / "extra" / "nccl-allreduce-gpu-a17-gpu-b22.txt").write_text(NCCL)
    (cluster / "extra" / "cw-fsx-acme.json").write_text(CLOUDWATCH)
    return cluster


def test_no_covered_identifier_leaks(tmp_path: Path) -> None:
    cluster = _planted_cluster(tmp_path)
    out, map_path = tmp_path / "out", tmp_path / "site.map.json"
    code, output = _redact(str(cluster), "-o", str(out), "--map", str(map_path))
    assert code == 0, output
    everything = _all_bytes(out)
    assert any(name.endswith("redaction.txt") for name, _ in everything)
    assert len(everything) > 20
    leaks = [
        (category, value, name)
        for category, values in PLANTED.items()
        for value in values
        for name, data in everything
        if value.lower().encode() in data.lower() or value.lower() in name.lower()
    ]
    assert leaks == []
    assert set(PLANTED) <= {c.name for c in CATEGORIES}
    doc = json.loads(map_path.read_text())["maps"]
    for category in ("hostname", "ipv4", "ipv6", "mac", "instance_id", "aws_resource_id", "account_id", "arn",
                     "s3_bucket", "cluster", "user", "email", "domain"):  # fmt: skip
        assert doc.get(category), f"nothing recorded for {category}"


def test_same_value_same_token_everywhere(tmp_path: Path) -> None:
    cluster = _planted_cluster(tmp_path)
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    assert _redact(str(cluster), "-o", str(out), "--map", str(map_path))[0] == 0
    maps = json.loads(map_path.read_text())["maps"]
    host = maps["hostname"]["gpu-a17"]
    ip = maps["ipv4"]["10.7.3.41"]
    texts = {name: data.decode("utf-8", "replace") for name, data in _all_bytes(out)}
    nccl = next(t for n, t in texts.items() if "nccl-allreduce" in n)
    meta = next(t for n, t in texts.items() if n.endswith("meta.env") and f"node={host}" in t)
    assert f"on    {host} device" in nccl and f"{host}:6899:6899" in nccl and f"eth0:{ip}<0>" in nccl
    assert f"ip-{ip.replace('.', '-')}," in nccl  # the ip-a-b-c-d name follows the address
    assert f"node={host}\nhostname={host}.domain-0001.internal" in meta
    topo = next(t for n, t in texts.items() if n.endswith("topology.conf"))
    assert f"Nodes={host},{maps['hostname']['gpu-b22']}" in topo
    assert f"Nodes=ip-{ip.replace('.', '-')}," in topo  # the host list expanded, every name masked
    # redaction.txt: categories and counts, no value
    summary = next(t for n, t in texts.items() if n.endswith("redaction.txt"))
    assert "hostname\t" in summary and "gpu-a17" not in summary


def test_map_is_reused_and_never_inside_out(tmp_path: Path) -> None:
    cluster = _planted_cluster(tmp_path)
    map_path = tmp_path / "site.map.json"
    assert _redact(str(cluster / "hptriage-gpu-a17-20261201T080000Z"), "-o", str(tmp_path / "a"),
                   "--map", str(map_path))[0] == 0  # fmt: skip
    first = json.loads(map_path.read_text())["maps"]
    assert _redact(str(cluster), "-o", str(tmp_path / "b"), "--map", str(map_path))[0] == 0
    second = json.loads(map_path.read_text())["maps"]
    for category, values in first.items():  # next month's bundles line up with today's
        for value, token in values.items():
            assert second[category][value] == token
    code, output = _redact(str(cluster), "-o", str(tmp_path / "c"), "--map", str(tmp_path / "c" / "m.json"))
    assert code == 2 and "inside OUT" in output
    assert not (tmp_path / "c").exists()
    code, output = _redact(str(cluster), "-o", str(tmp_path / "b"))
    assert code == 2 and "not an empty directory" in output
    default = tmp_path / "d.map.json"
    assert _redact(str(cluster), "-o", str(tmp_path / "d"))[0] == 0 and default.exists()  # beside OUT


def test_manifests_and_checksums_match_the_redacted_files(tmp_path: Path) -> None:
    cluster = _planted_cluster(tmp_path)
    out = tmp_path / "out"
    assert _redact(str(cluster), "-o", str(out), "--map", str(tmp_path / "m.json"))[0] == 0
    sums = list(out.rglob("*.sha256"))
    assert len(sums) == 1
    digest, name = sums[0].read_text().split()
    assert hashlib.sha256((sums[0].parent / name).read_bytes()).hexdigest() == digest
    files = dict(_all_bytes(out))
    manifests = [n for n in files if n.endswith("manifest.tsv")]
    assert len(manifests) == 2
    for manifest in manifests:
        base = manifest[: -len("manifest.tsv")]
        rows = files[manifest].decode().splitlines()
        header = rows[0].split("\t")
        for row in rows[1:]:
            cells = dict(zip(header, row.split("\t"), strict=True))
            data = files.get(base + cells["path"])
            if data is not None:
                assert (
                    int(cells["bytes"]) == len(data) and cells["sha256"] == hashlib.sha256(data).hexdigest()
                )


def test_mask_serials(tmp_path: Path) -> None:
    node = tmp_path / "n"
    shutil.copytree(ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-01", node)
    q = (node / "cmd" / "nvidia-smi-q.txt").read_text()
    uuids = sorted(set(__import__("re").findall(r"GPU-[0-9a-f-]{36}", q)))
    serials = sorted(set(__import__("re").findall(r"Serial Number\s*: (\d+)", q)))
    assert uuids and serials
    assert _redact(str(node), "-o", str(tmp_path / "kept"))[0] == 0
    kept = b"".join(d for _, d in _all_bytes(tmp_path / "kept"))
    assert all(u.encode() in kept for u in uuids)  # support needs them: kept by default
    assert _redact(str(node), "-o", str(tmp_path / "masked"), "--mask-serials")[0] == 0
    masked = b"".join(d for _, d in _all_bytes(tmp_path / "masked"))
    assert not any(u.encode() in masked for u in uuids) and not any(s.encode() in masked for s in serials)


def _comparable(doc: dict, redactor: Redactor | None) -> list[tuple]:
    """Findings as (rule, severity, gpu, node, message, params), identifiers put through the map."""
    out = []
    for f in doc["findings"]:
        node, message, params = f["node"] or "", f["message"], json.dumps(f["params"], sort_keys=True)
        if redactor is not None:
            node, message, params = redactor.apply(node), redactor.apply(message), redactor.apply(params)
        out.append(
            (f["rule"], f["severity"], f["gpu"] if f["gpu"] is not None else -1, node, message, params)
        )
    return sorted(out)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_redacted_scenario_gives_the_same_findings(tmp_path: Path, scenario: str) -> None:
    bundle = ROOT / "sample_bundles" / scenario / "bundle"
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    assert _redact(str(bundle), "-o", str(out), "--map", str(map_path))[0] == 0
    before = _analyze(bundle, tmp_path / "a.json")
    after = _analyze(out / "bundle", tmp_path / "b.json")
    assert before["findings"], "a scenario with findings"
    assert _comparable(after, None) == _comparable(before, Redactor.load(map_path))


def test_redacted_generated_cluster_gives_the_same_findings(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    generate.generate(cluster, nodes=8, scenario="mixed")
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    code, output = _redact(str(cluster), "-o", str(out), "--map", str(map_path))
    assert code == 0, output
    assert (
        len(list((out / "cluster").glob("*.tar.gz"))) == 8
        and len(list((out / "cluster").glob("*.sha256"))) == 8
    )
    before = _analyze(cluster, tmp_path / "a.json")
    after = _analyze(out / "cluster", tmp_path / "b.json")
    assert len(before["findings"]) > 5
    assert _comparable(after, None) == _comparable(before, Redactor.load(map_path))
    assert not after["verdict"]["unread_inputs"]


def test_fixture_texts_parse_the_same_after_redaction() -> None:
    """Tokens keep the shape of their values: every real fixture parses to as many rows after redaction."""
    import parsers

    redactor = Redactor()
    checked = 0
    for kind in parsers.KINDS:
        for path in sorted((FIXTURES / kind).glob("*")):
            if path.suffix == ".md" or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            redactor.learn(text, path.name)
            try:
                before = parsers.module_for(kind).parse(text)
            except Exception:
                continue
            after = parsers.module_for(kind).parse(redactor.apply(text))
            assert {t: len(r) for t, r in after.table_rows().items()} == {
                t: len(r) for t, r in before.table_rows().items()
            }, path
            checked += 1
    assert checked > 150


def test_verify_finds_what_the_map_would_hide(tmp_path: Path) -> None:
    cluster = _planted_cluster(tmp_path)
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    assert _redact(str(cluster), "-o", str(out), "--map", str(map_path))[0] == 0
    code, output = _redact("--verify", str(out), "--map", str(map_path))
    assert code == 0 and "no value of the map found" in output
    code, output = _redact("--verify", str(cluster), "--map", str(map_path))
    assert code == 1 and "leak: a hostname value of the map is in" in output


def test_security_doc_and_collector_share_the_one_list() -> None:
    import re

    from analyzer.redact.redactor import categories_table

    doc = (ROOT / "docs" / "security.md").read_text()
    block = doc.split("<!-- categories:", 1)[1].split("<!-- /categories -->", 1)[0]
    assert categories_table() in block, "docs/security.md is stale: python -m analyzer.redact.redactor"
    collector = (ROOT / "collector.sh").read_text()
    written = set(re.findall(r"printf '([a-z0-9_]+)\\t%", collector))
    assert {"ipv4", "hostname", "instance_id", "account_id", "arn"} <= written
    assert written - {"files_scanned"} <= {c.name for c in CATEGORIES}
    assert "hptriage redact" in (ROOT / "docs" / "collector.md").read_text()


# --- the same identifiers in the other forms they take in the field ------------------------------

FORMS = {  # line planted -> the original value that must be gone from OUT
    "AWS_ACCOUNT_ID=123456789013": "123456789013",
    '"aws_account_id": "123456789014"': "123456789014",
    "Account ID 123456789018": "123456789018",
    "123456789016.dkr.ecr.us-east-1.amazonaws.com/img:tag": "123456789016",
    "HWaddr 0A-1B-2C-3D-4E-5F": "0A-1B-2C-3D-4E-5F",
    "link/infiniband 80:00:02:08:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:5f:1a:2b brd": "0c:42:a1:03:00:5f",
    "/fsx/acme-train-west-data/ckpt": "acme-train-west",
    "Cluster: ACME-TRAIN-WEST": "ACME-TRAIN-WEST",
    "iface gpu-a17-ib0 up": "gpu-a17",
    "GPU-A17 kernel: x": "GPU-A17",
    "ssh gpu-a17.other.net": "gpu-a17",
    "log_gpu-a17_x": "gpu-a17",
    "gpu-z99 slots=8": "gpu-z99",
    "mpirun -H gpu-y88:8,gpu-x77:8 -np 16 ./all_reduce_perf": "gpu-x77",
    "Linux gpu-w66 5.15.0-1048-aws #53-Ubuntu SMP x86_64 GNU/Linux": "gpu-w66",
    "http://gpu-v55:8080/metrics": "gpu-v55",
    "Dimensions: BucketName=acme-bucket-two": "acme-bucket-two",
    "bucket acme-bucket-three; s3://acme-bucket-three/": "acme-bucket-three",
    "node_10.9.8.7.log": "10.9.8.7",
    "::ffff:10.9.8.6": "10.9.8.6",
    "2600:1F18:ABCD:1200::5": "2600:1F18:ABCD:1200::5",
    "fe80::a1b2:c3ff:fed4:e5f6%eth0": "fe80::a1b2:c3ff:fed4:e5f6",
    "IP-10-9-8-4": "10-9-8-4",
    "Name: hyperpod-i-0aaa111bbb222ccc3": "0aaa111bbb222ccc3",
    "label hyperpod-i-0ddd111bbb222ccc3": "0ddd111bbb222ccc3",
    "fs-0aaa111bbb222ccc3.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh": "fs-0aaa111bbb222ccc3",
    "arn:aws-us-gov:iam::123456789015:user/bob": "123456789015",
    "Contact: Jane.Doe@Acme-ML.com": "Jane.Doe@Acme-ML.com",
    "~jdoe/bin": "jdoe",
    "JobId=12 UserId=asmith(1001) GroupId=asmith(1001)": "asmith",
    "placement/group-name=acme-pg-1": "acme-pg-1",
    "pg acme-pg-1 again": "acme-pg-1",
    "sagemaker.amazonaws.com/instance-group-name: gpu-workers-x": "gpu-workers-x",
    '"Dimensions": [{"Name": "ClusterName", "Value": "eks-acme-1"}, {"Name": "BucketName", "Value": "acme-b4"}]': "eks-acme-1",
    "Bucket acme-b4 in eks-acme-1": "acme-b4",
    "search corp.acme-ml.com": "corp.acme-ml.com",
}


def test_identifiers_in_other_forms_do_not_leak(tmp_path: Path) -> None:
    node = tmp_path / "in" / "hptriage-gpu-a17-x"
    shutil.copytree(ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-01", node)
    (node / "meta.env").write_text(META.format(host="gpu-a17", fqdn="gpu-a17.corp.acme-ml.com",
                                               iid="i-0abc123def4567890"))  # fmt: skip
    (node / "cmd" / "forms.txt").write_text("\n".join([*FORMS, "/home/ubuntu/.bashrc", ""]))
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    assert _redact(str(node), "-o", str(out), "--map", str(map_path))[0] == 0
    everything = b"".join(data.lower() for _, data in _all_bytes(out))
    assert [value for value in FORMS.values() if value.lower().encode() in everything] == []
    text = next(out.rglob("forms.txt")).read_text()
    assert "/home/ubuntu/.bashrc" in text  # a generic account names no one
    assert "HWaddr 02-00-00-00-00-" in text and "::ffff:198.18." in text  # shapes kept
    assert "instance_type=p5.48xlarge" in next(out.rglob("meta.env")).read_text()
    assert _redact("--verify", str(out), "--map", str(map_path))[0] == 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="ab-1.", min_size=1, max_size=6), min_size=1, max_size=12),
    st.text(alphabet="ab-1. x", max_size=60),
)
def testtrie_pattern_matches_as_the_longest_first_alternation(words: list[str], text: str) -> None:
    import re

    from analyzer.redact.redactor import trie_pattern

    flat = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    wrap = r"(?<![a-z0-9])(?:{})(?![a-z0-9])"
    assert re.findall(wrap.format(trie_pattern(words)), text) == re.findall(wrap.format(flat), text)


_PIECES = ["10.1.2.3", "ip-10-1-2-3", "0a:1b:2c:3d:4e:5f", "i-0abc123def4567890", "fs-0123456789abcdef0",
           "arn:aws:iam::123456789012:role/r", "s3://acme-bkt/k", "a@b.com", "/home/jdoe/", "2600:1f18::7",
           "\nhostname=gpu-q1\n", "x", "9", "~", "é", "\x00", "²", "-", "_"]  # fmt: skip
_SEPARATORS = [" ", "\n", "=", ",", '"', "(", "[", "\t", " -> ", "/", "é", "²", "\xc3\xa9"]
_SECRETS = ("10.1.2.3", "0a:1b:2c:3d:4e:5f", "0abc123def4567890", "0123456789abcdef0", "123456789012",
            "acme-bkt", "a@b.com", "jdoe", "2600:1f18::7", "gpu-q1")  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_SEPARATORS)), max_size=30),
    st.text(max_size=30),
)
def test_redaction_never_fails_and_leaves_no_identifier(pieces: list[tuple[str, str]], noise: str) -> None:
    """Identifiers among any other words, separators, bytes past 127 and random text: no failure, and
    none of them is left where it stood apart (glued to other letters or digits it is another word)."""
    import re

    text = "".join(piece + sep for piece, sep in pieces) + noise
    r = Redactor()
    r.learn(text, "meta.env")
    out = r.apply(text)
    for secret in _SECRETS:
        alone = rf"(?<![A-Za-z0-9.:@~-]){re.escape(secret)}(?![A-Za-z0-9:@-])"
        if secret not in noise and re.search(alone, text):
            assert not re.search(alone, out), (secret, text, out)


def test_cluster_tarball_stays_a_tarball_and_analyzes_the_same(tmp_path: Path) -> None:
    """A cluster bundle (one tarball of node tarballs and extra/): redacted into one tarball, nested
    node tarballs redacted inside it, nothing covered left, the same findings through the map."""
    cluster = tmp_path / "cluster"
    generate.generate(cluster, nodes=4, scenario="mixed")
    shutil.copytree(_planted_cluster(tmp_path / "planted"), cluster, dirs_exist_ok=True)
    tarball = make_tar(cluster, tmp_path / "acme-cluster.tar.gz")
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    code, output = _redact(str(tarball), "-o", str(out), "--map", str(map_path))
    assert code == 0, output
    assert [p.name for p in out.iterdir()] == ["acme-cluster.tar.gz"]
    everything = _all_bytes(out)
    nested = [name for name, _ in everything if name.count("!") == 2 and name.endswith("meta.env")]
    assert len(nested) == 5  # four generated node tarballs and the planted one, opened inside
    leaks = [
        v for vs in PLANTED.values() for v in vs for n, d in everything if v.lower().encode() in d.lower()
    ]
    assert leaks == []
    before = _analyze(tarball, tmp_path / "a.json")
    after = _analyze(out / "acme-cluster.tar.gz", tmp_path / "b.json")
    assert len(before["findings"]) > 5
    assert _comparable(after, None) == _comparable(before, Redactor.load(map_path))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_mix_of_real_outputs_redacts_to_the_same_findings(tmp_path: Path, seed: int) -> None:
    """Clusters whose nodes each hold a random real fixture of every kind (some left out) and whose
    extra/ holds real nccl-tests and CloudWatch files: analyze gives the same findings before and after
    redaction."""
    import random

    import parsers

    rng = random.Random(seed)
    cluster = tmp_path / "cluster"
    cluster.mkdir()

    def real(kind: str) -> list[Path]:
        return [p for p in sorted((FIXTURES / kind).glob("*")) if p.is_file() and p.suffix != ".md"]

    for i in range(rng.randint(3, 5)):
        files = [
            (f"cmd/{kind}.txt", kind, rng.choice(real(kind)).read_text(errors="replace"))
            for kind in parsers.KINDS
            if kind not in ("nccl-tests", "cloudwatch") and real(kind) and rng.random() > 0.25
        ]
        generate.write_node(cluster, i, files)
    (cluster / "extra").mkdir()
    for kind in ("nccl-tests", "cloudwatch"):
        for path in rng.sample(real(kind), 2):
            shutil.copy(path, cluster / "extra" / f"{kind}-{path.name}")
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    assert _redact(str(cluster), "-o", str(out), "--map", str(map_path))[0] == 0
    before = _analyze(cluster, tmp_path / "a.json")
    after = _analyze(out / "cluster", tmp_path / "b.json")
    assert before["findings"]
    assert _comparable(after, None) == _comparable(before, Redactor.load(map_path))


def test_verify_reads_words_as_redaction_does(tmp_path: Path) -> None:
    """A value inside a longer word is another word (host node64 in the mount option inode64); glued
    by - _ . it is still that value."""
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    out.mkdir()
    redactor = Redactor()
    redactor.learn("hostname=node64\n", "meta.env")
    redactor.apply("node64")
    redactor.save(map_path)
    (out / "mounts.txt").write_text("tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n")
    assert _redact("--verify", str(out), "--map", str(map_path))[0] == 0
    (out / "log.txt").write_text("eth0 on NODE64-ib0 up\n")
    code, output = _redact("--verify", str(out), "--map", str(map_path))
    assert code == 1 and "log.txt" in output and "mounts.txt" not in output


# -- a copy never exists without its map ----------------------------------------------------------------

XID_BUNDLE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle"


def _left_beside(folder: Path) -> list[str]:
    """What a failed redaction left in folder (staging folders, partial maps, copies)."""
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("where", ["file-as-folder", "proc"])
def test_a_map_that_cannot_be_written_leaves_no_copy(tmp_path: Path, where: str) -> None:
    """--map where no file can be made (a file standing for its folder; /proc, which takes no file even
    from root): exit 2 naming the map and why, before anything is copied."""
    (tmp_path / "notes.txt").write_text("notes\n")
    map_path = (
        tmp_path / "notes.txt" / "site.map.json" if where == "file-as-folder" else Path("/proc/site.map.json")
    )
    result = CliRunner().invoke(
        cli, ["redact", str(XID_BUNDLE), "-o", str(tmp_path / "out"), "--map", str(map_path)]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        result.stderr.startswith(f"hptriage: error: cannot write --map {map_path}: ")
        and result.stderr.count("\n") == 1
    )
    assert result.stdout == "" and _left_beside(tmp_path) == ["notes.txt"]


def test_a_map_failing_after_the_copies_leaves_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The map fails when it is saved, after every copy was made (disk full): the copies are removed, the
    map reused from an earlier run is left as it was, nothing half-written remains; exit 2."""
    import errno

    map_path = tmp_path / "site.map.json"
    assert (
        _redact(str(XID_BUNDLE / "p5-node-01"), "-o", str(tmp_path / "first"), "--map", str(map_path))[0] == 0
    )
    earlier = map_path.read_bytes()
    saved = Redactor.save

    def full(self: Redactor, path: Path) -> None:
        saved(self, path)  # written in part, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Redactor, "save", full)
    result = CliRunner().invoke(
        cli, ["redact", str(XID_BUNDLE), "-o", str(tmp_path / "out"), "--map", str(map_path)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == f"hptriage: error: cannot write the map {map_path}: No space left on device\n"
    assert _left_beside(tmp_path) == ["first", "site.map.json"] and map_path.read_bytes() == earlier


def test_a_copy_failing_midway_leaves_no_copy_and_no_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy that cannot be written (disk full after the first files): exit 2 naming OUT; neither the
    copies made so far nor a map are left."""
    import errno

    from analyzer.redact import bundles

    write_dir = bundles._Job.write_dir

    def full(self: bundles._Job, root: Path, target: Path) -> None:
        if target.name != "bundle":  # the first input is copied, the second fails
            write_dir(self, root, target)
            return
        raise OSError(errno.ENOSPC, "No space left on device", str(target / "h100-node-04" / "meta.env"))

    monkeypatch.setattr(bundles._Job, "write_dir", full)
    out = tmp_path / "out"
    args = [
        "redact",
        str(XID_BUNDLE / "p5-node-01"),
        str(XID_BUNDLE),
        "-o",
        str(out),
        "--map",
        str(tmp_path / "m.json"),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"hptriage: error: cannot write {out}: No space left on device\n"
    assert _left_beside(tmp_path) == []


def test_an_empty_out_is_filled_and_emptied_again_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OUT given as an empty folder: the copies replace it whole; where no folder can be made beside it
    (here: the staging name taken), they are written into it, and a failure empties it again."""
    import errno

    from analyzer.redact import bundles

    out = tmp_path / "out"
    out.mkdir()
    assert _redact(str(XID_BUNDLE), "-o", str(out), "--map", str(tmp_path / "a.json"))[0] == 0
    assert len(list(out.glob("bundle/*/meta.env"))) == 4 and _left_beside(tmp_path) == [
        "a.json",
        "out",
    ]

    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / ".other.redacting-taken").write_text("in the way\n")
    monkeypatch.setattr(bundles.secrets, "token_hex", lambda n: "taken")
    assert _redact(str(XID_BUNDLE), "-o", str(other), "--map", str(tmp_path / "b.json"))[0] == 0
    assert len(list(other.glob("bundle/*/meta.env"))) == 4

    def full(self: Redactor, path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Redactor, "save", full)
    third = tmp_path / "third"
    third.mkdir()
    (tmp_path / ".third.redacting-taken").write_text("in the way\n")
    code, output = _redact(str(XID_BUNDLE), "-o", str(third), "--map", str(tmp_path / "c.json"))
    assert code == 2 and "cannot write the map" in output
    assert list(third.iterdir()) == [] and not (tmp_path / "c.json").exists()
