"""Signals: the queries that rules and the report data share, so a chart shows what a rule judged.

- ``fs``: FSx / EBS CloudWatch series, sustained runs over a line, iowait per node, full data mounts;
- ``nccl``: nccl-tests runs with their nodes, pairs of nodes, busbw evidence, the slow-pair localisation;
- ``gpus``: one state per GPU from -q, the CSV or the table, with evidence per field;
- ``versions``: the majority version per peer group and the nodes that deviate from it;
- ``boot``: nodes collected while still settling after a boot (NVLink training, fabric in progress);
- ``kernel_time``: kernel-log stamps as UTC times (collected_at - uptime + stamp, or the printed time).
"""
