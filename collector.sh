#!/usr/bin/env bash
# hptriage collector: capture one node's diagnostic bundle (format v1, docs/bundle-format.md).
#
# Plain bash >= 4.2 with coreutils, tar and gzip.  It also uses grep and sed, which every base system
# ships (Amazon Linux 2, Ubuntu DLAMIs), for --redact and version look-ups; no python, jq or awk.
# Nothing is installed, loaded, restarted or sent anywhere: the only network access is the instance
# metadata service on 169.254.169.254, and only with --imds.  It writes only under --out (a private
# work directory there, removed on exit, and the finished .tar.gz / .sha256).
#
# Every probe runs through run_cmd: `timeout -k GRACE T`, stdin from /dev/null, stdout/stderr to
# cmd/<name>.txt/.err, exit status (124 timeout, 127 tool missing), duration and a size cap; if even
# SIGKILL does not end it (a process stuck in the kernel, as nvidia-smi is when a GPU has fallen off
# the bus) the collector stops waiting for it and moves on.
#
# Style: `set -u`, no `set -e` (one failing probe must not stop the rest); bash 4.2 compatible (no
# `wait -n`, namerefs, EPOCHREALTIME or negative array subscripts; empty arrays expanded with ${a[@]+}).

set -u
export LC_ALL=C TZ=UTC

readonly COLLECTOR_VERSION=0.1.0
readonly BUNDLE_FORMAT=1
readonly GRACE=2                          # seconds between SIGTERM and SIGKILL
readonly PROBE_CAP_BYTES=$((32 * 1024 * 1024))   # per probe output cap
readonly DMESG_TAIL_BYTES=$((16 * 1024 * 1024))  # kernel log: the last 16 MiB
readonly IMDS_TIMEOUT=2                   # per IMDS request

usage() {
	cat <<'EOF'
Usage: bash collector.sh [options]

Capture this node's GPU, EFA, storage and kernel diagnostics into one bundle that
`hptriage analyze` reads: hptriage-<node>-<UTC stamp>.tar.gz and its .sha256.
Read-only: installs nothing, loads no module, restarts nothing, calls out nowhere
(except the instance metadata service with --imds).

Options:
  --out DIR          where to write the bundle (default: current directory)
  --node NAME        node name used in reports (default: $SLURMD_NODENAME, else the
                     short host name)
  --add PATH         copy a file or directory into the bundle's extra/ (repeatable):
                     CloudWatch exports, nccl-tests logs, training logs
  --timeout SECONDS  limit for each probe (default 20); the whole run is bounded by
                     SECONDS x number of probes (about 22-26)
  --max-size MB      cap on the bundle's uncompressed contents (default 256)
  --redact           mask host names, IPv4 addresses, instance ids, account ids and
                     ARNs; redaction.txt in the bundle says what was masked
  --imds             read instance id/type, AZ and placement group from the instance
                     metadata service (IMDSv2, 2 s per request)
  --dcgm             also run `dcgmi diag -r 1` (short, read-only)
  --quiet            print only the bundle path
  --help             this text
  --version          print the collector version

Exit status: 0 when a bundle was written (failed probes are recorded in its
manifest.tsv), 1 when none could be written, 2 for a usage error.
EOF
}

die_usage() {
	printf 'collector.sh: %s\nTry: bash collector.sh --help\n' "$1" >&2
	exit 2
}

# ---------------------------------------------------------------------------------------------
# Options

OUT_DIR=.
NODE=""
ADDS=()
T=20
MAX_MB=256
REDACT=0
IMDS=0
DCGM=0
QUIET=0

need_arg() { [[ $# -ge 2 ]] || die_usage "option $1 needs a value"; }

while [[ $# -gt 0 ]]; do
	opt=$1
	val=""
	if [[ $opt == --*=* ]]; then
		val=${opt#*=}
		opt=${opt%%=*}
		set -- "$opt" "$val" "${@:2}"
	fi
	case $opt in
	--out) need_arg "$@"; OUT_DIR=$2; shift 2 ;;
	--node) need_arg "$@"; NODE=$2; shift 2 ;;
	--add) need_arg "$@"; ADDS+=("$2"); shift 2 ;;
	--timeout) need_arg "$@"; T=$2; shift 2 ;;
	--max-size) need_arg "$@"; MAX_MB=$2; shift 2 ;;
	--redact) REDACT=1; shift ;;
	--imds) IMDS=1; shift ;;
	--dcgm) DCGM=1; shift ;;
	--quiet | -q) QUIET=1; shift ;;
	--help | -h) usage; exit 0 ;;
	--version | -V) printf 'hptriage collector %s (bundle format %s)\n' "$COLLECTOR_VERSION" "$BUNDLE_FORMAT"; exit 0 ;;
	*) die_usage "unknown option '$opt'" ;;
	esac
done

[[ $T =~ ^[1-9][0-9]{0,4}$ ]] || die_usage "--timeout must be a whole number of seconds >= 1, not '$T'"
[[ $MAX_MB =~ ^[1-9][0-9]{0,6}$ ]] || die_usage "--max-size must be a whole number of MB >= 1, not '$MAX_MB'"
[[ -z $NODE || $NODE =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]] ||
	die_usage "--node must be 1-63 of A-Z a-z 0-9 . _ - (starting with a letter or digit), not '$NODE'"
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 2))); then
	printf 'collector.sh: bash >= 4.2 required (this is %s)\n' "$BASH_VERSION" >&2
	exit 1
fi

# Tools the collector itself needs (not probes).
for tool in timeout date mktemp tar gzip sha256sum head tail wc cat cp mv rm mkdir sleep uname sort tr cut du grep sed; do
	command -v "$tool" >/dev/null 2>&1 || {
		printf 'collector.sh: required tool %s not found on PATH (%s)\n' "$tool" "$PATH" >&2
		exit 1
	}
done

# Probed tools often live in sbin or vendor directories missing from a minimal PATH (srun, SSM, env -i).
# They go at the END so whatever the caller put first still wins.
for d in /usr/local/sbin /usr/local/bin /usr/sbin /sbin /opt/amazon/efa/bin /usr/local/cuda/bin /opt/slurm/bin; do
	case ":$PATH:" in *":$d:"*) ;; *) PATH="$PATH:$d" ;; esac
done
export PATH

# ---------------------------------------------------------------------------------------------
# Small helpers

say() { ((QUIET)) || printf 'hptriage: %s\n' "$*" >&2; }
now_ns() { date +%s%N; }
# seconds with 3 decimals from nanoseconds
fmt_s() {
	local ns=$1
	printf '%d.%03d' $((ns / 1000000000)) $(((ns % 1000000000) / 1000000))
}
one_line() { # flatten a value for meta.env / manifest: no tabs, CR or newlines
	local v=$1
	v=${v//$'\t'/ }
	v=${v//$'\r'/ }
	v=${v//$'\n'/ }
	printf '%s' "$v"
}
file_size() {
	local s
	s=$(wc -c <"$1" 2>/dev/null) || s=0
	s=${s//[^0-9]/}
	printf '%s' "${s:-0}"
}
join_cmd() {
	local IFS=' '
	printf '%s' "$*"
}
join_by() { # SEP ITEMS...
	local IFS=$1
	shift
	printf '%s' "$*"
}

# ---------------------------------------------------------------------------------------------
# Sub-probes: functions that run in a child bash (so `timeout` can bound them).  They get the
# collector's functions through SUB_SRC and their limits through exported variables.

# s_efa_ports: `path: value` for every RDMA device's fw_ver and every port's state, phys_state, rate,
# link_layer and error counters.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_efa_ports() {
	local d k v found=0
	for d in /sys/class/infiniband/*; do
		[[ -r $d/fw_ver ]] || continue
		IFS= read -r v <"$d/fw_ver" || true
		printf '%s: %s\n' "$d/fw_ver" "$v"
	done
	for d in /sys/class/infiniband/*/ports/*; do
		[[ -d $d ]] || continue
		for k in state phys_state rate link_layer counters/port_rcv_errors counters/port_xmit_discards; do
			[[ -r $d/$k ]] || continue
			IFS= read -r v <"$d/$k" || true
			printf '%s: %s\n' "$d/$k" "$v"
			found=1
		done
	done
	((found)) || echo "no RDMA ports under /sys/class/infiniband" >&2
	return 0
}

# s_first_line FILE: print the first line of a readable file.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_first_line() {
	local v=""
	[[ -r $1 ]] && IFS= read -r v <"$1"
	printf '%s' "$v"
}

# s_versions NVSMI_Q_FILE: key=value lines of the software stack, from files on the host.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_versions() {
	local qfile=${1-} v f line c
	# EFA installer
	v=""
	if [[ -r /opt/amazon/efa_installed_packages ]]; then
		while IFS= read -r line; do
			[[ $line =~ ^#\ *EFA\ installer\ version:\ *([^[:space:]]+) ]] && { v=${BASH_REMATCH[1]}; break; }
		done </opt/amazon/efa_installed_packages
	fi
	[[ -z $v ]] && v=$(s_first_line /opt/amazon/efa/share/VERSION)
	[[ -n $v ]] && echo "efa_installer=$v"
	# efa kernel module (loaded one)
	v=$(s_first_line /sys/module/efa/version)
	[[ -n $v ]] && echo "efa_module=$v"
	# libfabric
	if command -v fi_info >/dev/null 2>&1; then
		while IFS= read -r line; do
			[[ $line =~ ^libfabric:\ *([^[:space:]]+) ]] && echo "libfabric=${BASH_REMATCH[1]}"
		done < <(timeout -k 1 "$HPT_SUB_T" fi_info --version </dev/null 2>/dev/null)
	fi
	# aws-ofi-nccl plugin(s): version string inside the library
	for f in /opt/amazon/ofi-nccl/lib*/libnccl-net*.so /opt/aws-ofi-nccl/lib*/libnccl-net*.so \
		/usr/local/lib/libnccl-net*.so /usr/lib64/libnccl-net*.so /usr/lib/x86_64-linux-gnu/libnccl-net*.so \
		/opt/amazon/efa/lib*/libnccl-net*.so; do
		[[ -f $f ]] || continue
		echo "# aws-ofi-nccl plugin: $f" >&2
		v=$(timeout -k 1 "$HPT_SUB_T" grep -aoE -m1 'aws-ofi-nccl[ -]v?[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*' "$f" 2>/dev/null | head -n 1)
		[[ -z $v ]] && v=$(timeout -k 1 "$HPT_SUB_T" grep -aoE -m1 '\b[0-9]+\.[0-9]+\.[0-9]+-aws\b' "$f" 2>/dev/null | head -n 1)
		v=${v#aws-ofi-nccl}
		v=${v# }
		v=${v#-}
		[[ -n $v ]] && echo "ofi_nccl=$v ($f)"
	done
	# NCCL libraries: the version is in the file name libnccl.so.X.Y.Z
	for f in /usr/lib/x86_64-linux-gnu/libnccl.so.*.*.* /usr/lib64/libnccl.so.*.*.* /usr/lib/aarch64-linux-gnu/libnccl.so.*.*.* \
		/usr/local/lib/libnccl.so.*.*.* /usr/local/cuda*/lib*/libnccl.so.*.*.* /opt/nccl/build/lib/libnccl.so.*.*.* \
		/opt/nccl/lib/libnccl.so.*.*.*; do
		[[ -f $f ]] || continue
		echo "nccl=${f##*/libnccl.so.} ($f)"
	done
	# CUDA toolkit behind /usr/local/cuda
	v=""
	if [[ -r /usr/local/cuda/version.json ]]; then
		c=$(head -c 4096 /usr/local/cuda/version.json)
		[[ $c =~ \"cuda\"[^}]*\"version\"[[:space:]]*:[[:space:]]*\"([^\"]+)\" ]] && v=${BASH_REMATCH[1]}
	fi
	if [[ -z $v && -r /usr/local/cuda/version.txt ]]; then
		c=$(s_first_line /usr/local/cuda/version.txt)
		[[ $c =~ ([0-9]+\.[0-9]+(\.[0-9]+)?) ]] && v=${BASH_REMATCH[1]}
	fi
	if [[ -z $v && -L /usr/local/cuda ]]; then
		c=$(readlink /usr/local/cuda)
		[[ $c =~ cuda-([0-9]+\.[0-9]+) ]] && v=${BASH_REMATCH[1]}
	fi
	[[ -n $v ]] && echo "cuda=$v (/usr/local/cuda)"
	for f in /usr/local/cuda-*; do [[ -d $f ]] && echo "# cuda toolkit installed: $f" >&2; done
	# driver: the loaded kernel module, else what nvidia-smi -q reported (already captured)
	v=$(s_first_line /sys/module/nvidia/version)
	if [[ -z $v && -r /proc/driver/nvidia/version ]]; then
		c=$(s_first_line /proc/driver/nvidia/version)
		[[ $c =~ [[:space:]]([0-9]+\.[0-9]+(\.[0-9]+)?)[[:space:]] ]] && v=${BASH_REMATCH[1]}
	fi
	local qdrv="" qcuda=""
	if [[ -n $qfile && -r $qfile ]]; then
		while IFS= read -r line; do
			[[ $line =~ ^Driver\ Version[[:space:]]*:[[:space:]]*([^[:space:]]+) ]] && qdrv=${BASH_REMATCH[1]}
			[[ $line =~ ^CUDA\ Version[[:space:]]*:[[:space:]]*([^[:space:]]+) ]] && { qcuda=${BASH_REMATCH[1]}; break; }
			[[ $line == GPU\ * ]] && break
		done <"$qfile"
	fi
	[[ -z $v ]] && v=$qdrv
	[[ -n $qcuda ]] && echo "cuda_driver_max=$qcuda"
	[[ -n $v ]] && echo "nvidia_driver=$v"
	echo "kernel=$(uname -r)"
	if [[ -r /etc/os-release ]]; then
		while IFS= read -r line; do
			if [[ $line == PRETTY_NAME=* ]]; then
				line=${line#PRETTY_NAME=}
				line=${line#\"}
				echo "os=${line%\"}"
			fi
		done </etc/os-release
	fi
	return 0
}

# s_cpu_governor: `cpuN governor` for every CPU with cpufreq.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_cpu_governor() {
	local f v n found=0
	for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
		[[ -r $f ]] || continue
		n=${f#/sys/devices/system/cpu/}
		n=${n%%/*}
		IFS= read -r v <"$f" || true
		printf '%s %s\n' "$n" "$v"
		found=1
	done
	((found)) || echo "no cpufreq scaling_governor files (no cpufreq driver, common on VMs)" >&2
	return 0
}

# s_shm: /dev/shm size and contents.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_shm() {
	local rc
	df -P -B1 /dev/shm
	rc=$?
	echo "--- ls -la /dev/shm"
	ls -la /dev/shm
	return "$rc"
}

# s_proc_snap FILE: two snapshots 2 s apart (iostat fallback).
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_proc_snap() {
	echo "--- $(date -u +%Y-%m-%dT%H:%M:%S.%NZ)"
	cat "$1" || return 1
	sleep 2
	echo "--- $(date -u +%Y-%m-%dT%H:%M:%S.%NZ)"
	cat "$1"
}

# s_http METHOD PATH [TOKEN]: one HTTP/1.1 request to IMDS over bash's /dev/tcp; body on stdout.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_http() {
	local method=$1 path=$2 tok=${3-} line status="" len=""
	exec 3<>/dev/tcp/169.254.169.254/80 || return 7
	{
		printf '%s %s HTTP/1.1\r\nHost: 169.254.169.254\r\nConnection: close\r\n' "$method" "$path"
		[[ $method == PUT ]] && printf 'X-aws-ec2-metadata-token-ttl-seconds: 60\r\nContent-Length: 0\r\n'
		[[ -n $tok ]] && printf 'X-aws-ec2-metadata-token: %s\r\n' "$tok"
		printf '\r\n'
	} >&3
	IFS= read -r line <&3 || return 8
	[[ $line =~ ^HTTP/[0-9.]+\ ([0-9]+) ]] && status=${BASH_REMATCH[1]}
	while IFS= read -r line <&3; do
		line=${line%$'\r'}
		[[ -z $line ]] && break
		[[ ${line,,} =~ ^content-length:\ *([0-9]+) ]] && len=${BASH_REMATCH[1]}
	done
	if [[ -n $len ]]; then
		head -c "$len" <&3
	else
		cat <&3
	fi
	exec 3<&-
	[[ $status == 200 ]] || return 22
}

# s_imds_get PATH [TOKEN]: curl when present, else /dev/tcp; each request bounded.
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_imds_get() {
	local method=GET path=$1 tok=${2-}
	[[ $path == /latest/api/token ]] && method=PUT
	if command -v curl >/dev/null 2>&1; then
		local -a h=()
		[[ $method == PUT ]] && h=(-X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')
		[[ -n $tok ]] && h=(-H "X-aws-ec2-metadata-token: $tok")
		timeout -k 1 "$HPT_IMDS_T" curl -q -sS -f --noproxy '*' --connect-timeout 1 -m "$HPT_IMDS_T" \
			${h[@]+"${h[@]}"} "http://169.254.169.254$path" </dev/null
	else
		timeout -k 1 "$HPT_IMDS_T" "$BASH" -c "$HPT_SUB_SRC"$'\n''s_http "$@"' s_http "$method" "$path" "$tok" </dev/null
	fi
}

# s_imds: key=value lines from the instance metadata service (IMDSv2 first, then v1).
# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
s_imds() {
	local tok rc key path v got=0
	tok=$(s_imds_get /latest/api/token)
	rc=$?
	if ((rc != 0)) || [[ -z $tok ]]; then
		tok=""
		echo "IMDSv2 token request failed (rc=$rc); trying IMDSv1" >&2
		# 7/28/124: could not connect or timed out: the service is blocked; do not wait again.
		case $rc in 7 | 28 | 124 | 137) echo "instance metadata service unreachable" >&2; return 1 ;; esac
		echo "imds=v1"
	else
		echo "imds=v2"
	fi
	for key in instance_id:instance-id instance_type:instance-type availability_zone:placement/availability-zone \
		az_id:placement/availability-zone-id placement_group:placement/group-name \
		partition_number:placement/partition-number region:placement/region ami_id:ami-id \
		local_hostname:local-hostname local_ipv4:local-ipv4; do
		path=${key#*:}
		v=$(s_imds_get "/latest/meta-data/$path" "$tok" 2>/dev/null) || continue
		v=${v//$'\n'/ }
		v=${v//$'\r'/}
		echo "${key%%:*}=$v"
		got=1
	done
	((got)) || { echo "no metadata returned" >&2; return 1; }
	return 0
}

HPT_SUB_SRC="set -u; export LC_ALL=C TZ=UTC
$(declare -f s_efa_ports s_first_line s_versions s_cpu_governor s_shm s_proc_snap s_http s_imds_get s_imds)"
HPT_SUB_T=$((T / 4 > 0 ? T / 4 : 1))
HPT_IMDS_T=$IMDS_TIMEOUT
export HPT_SUB_SRC HPT_SUB_T HPT_IMDS_T

# ---------------------------------------------------------------------------------------------
# The runner

RUN_RC=0
RUN_NS=0
RUN_ABANDONED=0
CUR_PID="" # the running probe's `timeout`, stopped if we are interrupted

# run_cmd LIMIT OUT ERR CMD...: run CMD under timeout, appending stdout/stderr to OUT/ERR.
run_cmd() {
	local limit=$1 out=$2 err=$3 t0 pid deadline nap=0.01
	shift 3
	RUN_ABANDONED=0
	t0=$(now_ns)
	if ! command -v -- "$1" >/dev/null 2>&1; then
		printf 'hptriage: %s: command not found (PATH=%s)\n' "$1" "$PATH" >>"$err"
		RUN_RC=127
		RUN_NS=0
		return
	fi
	timeout -k "$GRACE" "$limit" "$@" >>"$out" 2>>"$err" </dev/null &
	pid=$!
	CUR_PID=$pid
	deadline=$((t0 + (limit + GRACE + 3) * 1000000000))
	while kill -0 "$pid" 2>/dev/null; do
		if (($(now_ns) > deadline)); then
			# Not even SIGKILL ended it (uninterruptible sleep in the kernel): leave it behind.
			RUN_ABANDONED=1
			printf 'hptriage: still running %ss after SIGKILL; abandoned (process %s)\n' "$GRACE" "$pid" >>"$err"
			break
		fi
		sleep "$nap"
		case $nap in 0.01) nap=0.02 ;; 0.02) nap=0.05 ;; 0.05) nap=0.1 ;; 0.1) nap=0.2 ;; esac
	done
	if ((RUN_ABANDONED)); then
		RUN_RC=124
	else
		wait "$pid"
		RUN_RC=$?
	fi
	CUR_PID=""
	RUN_NS=$(($(now_ns) - t0))
}

# Manifest rows, written once at the end (after --redact, so sizes and digests match the files).
declare -a R_PATH=() R_KIND=() R_RC=() R_DUR=() R_CMD=() R_NOTE=()
PROBES_RUN=0
PROBES_TIMED_OUT=0
PROBES_FAILED=0
BOUNDED_RUNS=0 # probes, file copies and --add copies, each limited to T seconds

add_row() { # PATH KIND RC DUR CMD NOTE
	R_PATH+=("$1")
	R_KIND+=("$2")
	R_RC+=("$3")
	R_DUR+=("$4")
	R_CMD+=("$(one_line "$5")")
	R_NOTE+=("$6")
}

# cap_file FILE BYTES [tail]: keep the first (or last) BYTES; returns 0 when it truncated.
cap_file() {
	local f=$1 cap=$2 how=${3-head} size
	size=$(file_size "$f")
	((size > cap)) || return 1
	if [[ $how == tail ]]; then
		# drop the partial first line left by the byte cut
		tail -c "$cap" "$f" | tail -n +2 >"$f.cap"
	else
		head -c "$cap" "$f" >"$f.cap"
	fi
	mv -f "$f.cap" "$f"
	return 0
}

# finish_probe NAME KIND DISPLAY [EXTRA_NOTE]: record the last run_cmd of a probe.
finish_probe() {
	local name=$1 kind=$2 display=$3 extra=${4-} note=() out
	out=$BUNDLE/cmd/$name.txt
	case $RUN_RC in
	0) ;;
	124) note+=(timeout); PROBES_TIMED_OUT=$((PROBES_TIMED_OUT + 1)) ;;
	127) note+=(missing-tool) ;;
	*) PROBES_FAILED=$((PROBES_FAILED + 1)) ;;
	esac
	((RUN_ABANDONED)) && note+=(abandoned)
	[[ -n $extra ]] && note+=("$extra")
	if [[ $name == dmesg ]]; then
		cap_file "$out" "$DMESG_TAIL_BYTES" tail && note+=(truncated)
	else
		cap_file "$out" "$PROBE_CAP_BYTES" && note+=(truncated)
	fi
	cap_file "$BUNDLE/cmd/$name.err" $((1024 * 1024)) >/dev/null
	local notes=""
	((${#note[@]})) && notes=$(join_by , "${note[@]}")
	add_row "cmd/$name.txt" "$kind" "$RUN_RC" "$(fmt_s "$RUN_NS")" "$display" "$notes"
	PROBES_RUN=$((PROBES_RUN + 1))
	BOUNDED_RUNS=$((BOUNDED_RUNS + 1))
	say "$(printf '%-26s rc=%s %ss %s' "$name" "$RUN_RC" "$(fmt_s "$RUN_NS")" "$notes")"
}

# probe NAME KIND CMD...: the common case; the manifest command is CMD as typed.
probe() {
	local name=$1 kind=$2
	shift 2
	probe_as "$name" "$kind" "$(join_cmd "$@")" "$@"
}

# probe_as NAME KIND DISPLAY CMD...: same, with the command shown as DISPLAY.
probe_as() {
	local name=$1 kind=$2 display=$3
	shift 3
	: >"$BUNDLE/cmd/$name.txt"
	: >"$BUNDLE/cmd/$name.err"
	run_cmd "$T" "$BUNDLE/cmd/$name.txt" "$BUNDLE/cmd/$name.err" "$@"
	finish_probe "$name" "$kind" "$display"
}

# probe_fn NAME KIND DISPLAY FUNC ARGS...: run one of the s_* functions in a bounded child bash.
probe_fn() {
	local name=$1 kind=$2 display=$3 fn=$4
	shift 4
	probe_as "$name" "$kind" "$display" "$BASH" -c "$HPT_SUB_SRC"$'\n''"$@"' "hptriage-$name" "$fn" "$@"
}

# skip_probe NAME KIND DISPLAY REASON: record a probe that was not run.
skip_probe() {
	: >"$BUNDLE/cmd/$1.txt"
	printf 'hptriage: skipped: %s\n' "$4" >"$BUNDLE/cmd/$1.err"
	add_row "cmd/$1.txt" "$2" - - "$3" skipped
	say "$(printf '%-26s skipped (%s)' "$1" "$4")"
}

# copy_file SRC KIND: copy a host file to files/<SRC without leading '/'>.
copy_file() {
	local src=$1 kind=$2 dest
	dest=$BUNDLE/files/${src#/}
	mkdir -p "${dest%/*}"
	: >"$dest"
	run_cmd "$T" "$dest" /dev/null cat -- "$src"
	local cnote=""
	((RUN_RC == 0)) || cnote=copy-failed
	cap_file "$dest" "$PROBE_CAP_BYTES" && cnote=${cnote:+$cnote,}truncated
	add_row "files/${src#/}" "$kind" - - "$src" "$cnote"
	BOUNDED_RUNS=$((BOUNDED_RUNS + 1))
}

# ---------------------------------------------------------------------------------------------
# Set up

T_START=$(now_ns)
COLLECTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)

mkdir -p -- "$OUT_DIR" 2>/dev/null || { printf 'collector.sh: cannot create --out %s\n' "$OUT_DIR" >&2; exit 1; }
OUT_DIR=$(cd -- "$OUT_DIR" && pwd) || { printf 'collector.sh: cannot enter --out %s\n' "$OUT_DIR" >&2; exit 1; }
WORK=$(mktemp -d "$OUT_DIR/.hptriage-work.XXXXXX") || { printf 'collector.sh: cannot write in %s\n' "$OUT_DIR" >&2; exit 1; }

# shellcheck disable=SC2329 # called through HPT_SUB_SRC / trap
cleanup() {
	[[ -n ${WORK-} && -d $WORK && $WORK == "$OUT_DIR"/.hptriage-work.* ]] && rm -rf -- "$WORK"
}
# shellcheck disable=SC2329 # called by trap
on_signal() {
	local p=${CUR_PID:-${!-}} # $! covers a signal between starting a probe and noting it
	[[ -n $p ]] && kill -TERM "$p" 2>/dev/null
	say "$1; no bundle written"
	exit "$2"
}
trap cleanup EXIT
trap 'on_signal interrupted 130' INT
trap 'on_signal terminated 143' TERM

BUNDLE=$WORK/bundle
mkdir -p "$BUNDLE/cmd" "$BUNDLE/files"

HOSTNAME_FULL=$(uname -n)
HOST_SHORT=${HOSTNAME_FULL%%.*}
NODE_FROM=option
if [[ -z $NODE ]]; then
	NODE=${SLURMD_NODENAME:-$HOST_SHORT}
	NODE_FROM=host
fi
NODE=${NODE//[^A-Za-z0-9._-]/_}
[[ -n $NODE ]] || NODE=unknown-node

say "collecting node $NODE (timeout ${T}s per probe) into $OUT_DIR"

# ---------------------------------------------------------------------------------------------
# Probes

probe uptime uptime cat /proc/uptime

# Kernel log: dmesg -T in UTC, else raw dmesg, else the journal; one time budget for all three.
dmesg_probe() {
	local out=$BUNDLE/cmd/dmesg.txt err=$BUNDLE/cmd/dmesg.err t0 left display="" i tried=0
	local -a displays=("TZ=UTC dmesg -T" "dmesg" "journalctl -k -o short-iso --no-pager")
	local -a cmds0=(dmesg -T) cmds1=(dmesg) cmds2=(journalctl -k -o short-iso --no-pager)
	local ns_total=0
	: >"$err"
	t0=$(now_ns)
	for i in 0 1 2; do
		left=$((T - (($(now_ns) - t0) / 1000000000)))
		((left >= 1)) || break
		: >"$out"
		display=${displays[$i]}
		printf '$ %s\n' "$display" >>"$err"
		case $i in
		0) run_cmd "$left" "$out" "$err" "${cmds0[@]}" ;;
		1) run_cmd "$left" "$out" "$err" "${cmds1[@]}" ;;
		2) run_cmd "$left" "$out" "$err" "${cmds2[@]}" ;;
		esac
		tried=$((tried + 1))
		ns_total=$(($(now_ns) - t0))
		# stop on success (something printed) and on a timeout (the next source is likely to hang too)
		if ((RUN_RC == 0)) && [[ -s $out ]]; then break; fi
		((RUN_RC == 124)) && break
	done
	RUN_NS=$ns_total
	((RUN_RC == 0)) && [[ ! -s $out ]] && RUN_RC=1
	local extra=""
	((tried > 1)) && extra=fallback
	finish_probe dmesg dmesg "$display" "$extra"
}
dmesg_probe

# nvidia-smi.  After a timeout of `nvidia-smi -q` the GPU driver is hung; the other nvidia-smi probes
# would each hang for the full timeout too, so they are skipped.
NVSMI_HUNG=0
probe nvidia-smi-q nvidia-smi-q nvidia-smi -q
((RUN_RC == 124)) && NVSMI_HUNG=1
NVSMI_RC=$RUN_RC

QUERY_FIELDS=(index uuid pci.bus_id name serial vbios_version driver_version pstate persistence_mode
	temperature.gpu temperature.memory power.draw power.limit enforced.power.limit power.default_limit
	power.min_limit power.max_limit clocks.sm clocks.max.sm clocks.mem clocks.max.mem
	clocks.applications.graphics clocks.applications.memory clocks.default_applications.graphics
	clocks.default_applications.memory
	clocks_throttle_reasons.active clocks_event_reasons.active pcie.link.gen.current pcie.link.gen.max
	pcie.link.width.current pcie.link.width.max utilization.gpu memory.total memory.used ecc.mode.current
	ecc.errors.corrected.volatile.total ecc.errors.uncorrected.volatile.total
	ecc.errors.corrected.aggregate.total ecc.errors.uncorrected.aggregate.total
	retired_pages.single_bit_ecc.count retired_pages.double_bit_ecc.count retired_pages.pending
	mig.mode.current)

# --query-gpu: fields this driver rejects ("Field "x" is not a valid field to query.") are dropped one
# by one, so one unknown field never loses the rest; all attempts share one time budget.
query_gpu_probe() {
	local out=$BUNDLE/cmd/nvidia-smi-query-gpu.txt err=$BUNDLE/cmd/nvidia-smi-query-gpu.err
	local -a fields=("${QUERY_FIELDS[@]}") dropped=() keep=()
	local t0 left bad f list attempt=0 ns=0 display
	: >"$err"
	t0=$(now_ns)
	while :; do
		list=$(IFS=,; printf '%s' "${fields[*]}")
		display="nvidia-smi --query-gpu=$list --format=csv"
		left=$((T - (($(now_ns) - t0) / 1000000000)))
		if ((left < 1)); then RUN_RC=124; break; fi
		: >"$out"
		run_cmd "$left" "$out" "$err" nvidia-smi "--query-gpu=$list" --format=csv
		attempt=$((attempt + 1))
		((RUN_RC == 0 || RUN_RC == 124 || RUN_RC == 127)) && break
		bad=""
		if [[ $(head -c 4096 "$out" "$err" 2>/dev/null) =~ Field\ \"([^\"]+)\"\ is\ not\ a\ valid\ field ]]; then
			bad=${BASH_REMATCH[1]}
		fi
		[[ -n $bad ]] || break
		keep=()
		for f in "${fields[@]}"; do [[ $f == "$bad" ]] || keep+=("$f"); done
		((${#keep[@]} < ${#fields[@]} && ${#keep[@]} > 0)) || break
		fields=("${keep[@]}")
		dropped+=("$bad")
		printf 'hptriage: this driver rejects field %s; retrying without it\n' "$bad" >>"$err"
	done
	ns=$(($(now_ns) - t0))
	RUN_NS=$ns
	local extra=""
	if ((${#dropped[@]})); then
		extra="dropped-fields"
		printf 'hptriage: fields not supported by this driver: %s\n' "${dropped[*]}" >>"$err"
	fi
	finish_probe nvidia-smi-query-gpu nvidia-smi-csv "$display" "$extra"
}

REMAP_Q=(nvidia-smi "--query-remapped-rows=gpu_bus_id,gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure" --format=csv)
if ((NVSMI_HUNG)); then
	why="nvidia-smi -q timed out after ${T}s (hung driver or a GPU off the bus)"
	skip_probe nvidia-smi-query-gpu nvidia-smi-csv "nvidia-smi --query-gpu=... --format=csv" "$why"
	skip_probe nvidia-smi-remapped-rows nvidia-smi-csv "$(join_cmd "${REMAP_Q[@]}")" "$why"
	skip_probe nvidia-smi nvidia-smi "nvidia-smi" "$why"
	skip_probe nvidia-smi-topo nvidia-smi-topo "nvidia-smi topo -m" "$why"
	skip_probe nvidia-smi-nvlink nvidia-smi-nvlink "nvidia-smi nvlink -s" "$why"
elif ((NVSMI_RC == 127)); then
	# no nvidia-smi at all: record each as missing, without five identical runs
	for spec in "nvidia-smi-query-gpu|nvidia-smi-csv|nvidia-smi --query-gpu=... --format=csv" \
		"nvidia-smi-remapped-rows|nvidia-smi-csv|$(join_cmd "${REMAP_Q[@]}")" "nvidia-smi|nvidia-smi|nvidia-smi" \
		"nvidia-smi-topo|nvidia-smi-topo|nvidia-smi topo -m" "nvidia-smi-nvlink|nvidia-smi-nvlink|nvidia-smi nvlink -s"; do
		IFS='|' read -r n k c <<<"$spec"
		: >"$BUNDLE/cmd/$n.txt"
		printf 'hptriage: nvidia-smi: command not found (PATH=%s)\n' "$PATH" >"$BUNDLE/cmd/$n.err"
		add_row "cmd/$n.txt" "$k" 127 0.000 "$c" missing-tool
	done
	say "$(printf '%-26s %s' 'nvidia-smi (others)' 'missing-tool')"
else
	query_gpu_probe
	probe nvidia-smi-remapped-rows nvidia-smi-csv "${REMAP_Q[@]}"
	probe nvidia-smi nvidia-smi nvidia-smi
	probe nvidia-smi-topo nvidia-smi-topo nvidia-smi topo -m
	probe nvidia-smi-nvlink nvidia-smi-nvlink nvidia-smi nvlink -s
fi
# The PCI bus, whatever the driver says: a GPU listed here but not by nvidia-smi lost its driver; one
# missing here is gone from the bus.  Run even when nvidia-smi hung (lspci reads sysfs, not the driver).
probe lspci lspci lspci -D -nnk

# EFA / libfabric
probe fi-info fi-info fi_info -p efa
probe_fn efa-ports efa-ports "/sys/class/infiniband/*/{fw_ver,ports/*/{state,phys_state,rate,link_layer,counters/port_rcv_errors,counters/port_xmit_discards}}" s_efa_ports
probe_fn versions versions "versions of efa_installer efa_module libfabric ofi_nccl nccl cuda nvidia_driver kernel os" \
	s_versions "$BUNDLE/cmd/nvidia-smi-q.txt"
if [[ -e /opt/amazon/efa_installed_packages ]]; then
	probe efa-installed-packages versions cat /opt/amazon/efa_installed_packages
fi
probe modinfo-efa versions modinfo efa
probe fabricmanager fabricmanager systemctl status nvidia-fabricmanager --no-pager

# Host
probe_fn cpu-governor cpu-governor "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor" s_cpu_governor

# Storage
probe df df df -P -T
probe df-h - df -h
probe df-inodes df df -P -i
probe lfs-df lfs-df lfs df -h
probe mounts mounts cat /proc/mounts
probe_fn shm shm "df -P -B1 /dev/shm; echo '--- ls -la /dev/shm'; ls -la /dev/shm" s_shm
probe iostat iostat iostat -c -d -x -k 2 3
if ((RUN_RC == 127)); then
	probe_fn proc-stat - "cat /proc/stat; sleep 2; cat /proc/stat" s_proc_snap /proc/stat
	probe_fn proc-diskstats - "cat /proc/diskstats; sleep 2; cat /proc/diskstats" s_proc_snap /proc/diskstats
fi

# Placement
if ((IMDS)); then
	probe_fn imds placement "instance metadata service (IMDSv2): instance-id instance-type placement/*" s_imds
fi
probe slurm-topology placement scontrol show topology
for f in /etc/slurm/topology.conf /opt/slurm/etc/topology.conf /usr/local/etc/slurm/topology.conf \
	/etc/slurm-llnl/topology.conf; do
	[[ -f $f && -r $f ]] && copy_file "$f" placement
done

if ((DCGM)); then
	probe dcgmi-diag dcgmi-diag dcgmi diag -r 1
fi

# ---------------------------------------------------------------------------------------------
# --add: user files into extra/ (links followed; anything but plain files and directories dropped).
# Each added file gets a manifest row with an empty kind: the analyzer recognises it by content.

bundle_bytes() {
	local f total=0 s
	shopt -s globstar dotglob nullglob
	for f in "$BUNDLE"/**; do
		[[ -f $f && ! -L $f ]] || continue
		s=$(file_size "$f")
		total=$((total + s))
	done
	shopt -u globstar dotglob nullglob
	echo "$total"
}

MAX_BYTES=$((MAX_MB * 1024 * 1024))
if ((${#ADDS[@]})); then
	mkdir -p "$BUNDLE/extra"
	for src in "${ADDS[@]}"; do
		if [[ ! -e $src ]]; then
			say "--add $src: no such file or directory; skipped"
			continue
		fi
		base=${src%/}
		base=${base##*/}
		[[ -n $base && $base != . && $base != .. ]] || base=added
		base=${base//[^A-Za-z0-9._+-]/_}
		name=$base
		n=1
		while [[ -e $BUNDLE/extra/$name ]]; do
			n=$((n + 1))
			name=$base-$n
		done
		src_abs=$src
		[[ $src_abs == /* ]] || src_abs=$PWD/$src
		while [[ $src_abs == */ && ${#src_abs} -gt 1 ]]; do src_abs=${src_abs%/}; done
		# size first: a multi-GB directory is refused rather than copied and cut
		used=$(bundle_bytes)
		: >"$WORK/du.out"
		run_cmd "$T" "$WORK/du.out" /dev/null du -sbL -- "$src"
		size=$(head -c 100 "$WORK/du.out")
		size=${size%%[[:space:]]*}
		if [[ ! $size =~ ^[0-9]+$ ]]; then
			say "--add $src: cannot measure its size; skipped"
			continue
		fi
		if ((used + size > MAX_BYTES)); then
			say "--add $src: $size bytes would exceed --max-size ${MAX_MB} MB; skipped"
			continue
		fi
		run_cmd "$T" /dev/null "$WORK/add.err" cp -RL -- "$src" "$BUNDLE/extra/$name"
		add_rc=$RUN_RC
		BOUNDED_RUNS=$((BOUNDED_RUNS + 2)) # du + cp
		((add_rc == 0)) || say "--add $src: copy failed (rc=$add_rc, $(tail -n 1 "$WORK/add.err" 2>/dev/null))"
		shopt -s globstar dotglob nullglob
		for f in "$BUNDLE/extra/$name" "$BUNDLE/extra/$name"/**; do
			if [[ -L $f ]] || { [[ -e $f ]] && [[ ! -f $f && ! -d $f ]]; }; then
				rm -f -- "$f"
			fi
		done
		for f in "$BUNDLE/extra/$name" "$BUNDLE/extra/$name"/**; do
			[[ -f $f && ! -L $f ]] && add_row "${f#"$BUNDLE"/}" "" - - "added from $src_abs" ""
		done
		shopt -u globstar dotglob nullglob
		say "$(printf '%-26s %s' "extra/$name" "added from $src_abs")"
	done
fi

# ---------------------------------------------------------------------------------------------
# --redact: stable fake values, consistent within this bundle.  Only categories and counts are
# written to redaction.txt, never the original values.

re_escape() { # escape a literal for an extended regex (sed -r)
	local s=$1 out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in [.\[\]\\*^\$+?\(\){}\|/]) out+="\\$c" ;; *) out+=$c ;; esac
	done
	printf '%s' "$out"
}

redact_bundle() {
	local script=$WORK/redact.sed ip a b c d n i fake v svc rest f
	local -A IPMAP=() SEEN=()
	local -a ips=() ids=() accts=() arns=() files=() binary=()
	local hosts=0
	: >"$script"
	shopt -s globstar dotglob nullglob
	for f in "$BUNDLE"/**; do
		[[ -f $f && ! -L $f && -s $f ]] || continue
		if grep -Iq . "$f" 2>/dev/null; then files+=("$f"); else binary+=("${f#"$BUNDLE"/}"); fi
	done
	shopt -u globstar dotglob nullglob
	if ((${#files[@]} == 0)); then
		printf '# hptriage --redact\nnothing to scan\n' >"$BUNDLE/redaction.txt"
		return
	fi

	# ARNs (their account ids go with them)
	n=0
	while IFS= read -r v; do
		[[ -n $v ]] || continue
		n=$((n + 1))
		svc=${v#arn:}
		svc=${svc#*:}
		svc=${svc%%:*}
		printf 's#%s#arn:aws:%s:region:000000000000:redacted-%d#g\n' "$(re_escape "$v" | sed 's/#/\\#/g')" "$svc" "$n" >>"$script"
		arns+=("$v")
	done < <(grep -Eoh 'arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[0-9]{12}:[A-Za-z0-9_/:.+=@,-]+' "${files[@]}" 2>/dev/null | sort -u)

	# account ids in context: account / AccountId / OwnerId keys, ECR registry hosts
	n=0
	while IFS= read -r v; do
		v=${v//[^0-9]/}
		v=${v: -12}
		[[ ${#v} -eq 12 && -z ${SEEN[acct$v]-} ]] || continue
		SEEN[acct$v]=1
		n=$((n + 1))
		printf 's/(^|[^0-9])%s([^0-9]|$)/\\1%012d\\2/g\n' "$v" "$n" >>"$script"
		accts+=("$v")
	done < <(grep -Eohi '(account[_ -]?id|owner[_ -]?id|"account")"?[[:space:]]*[:=][[:space:]]*"?[0-9]{12}|[0-9]{12}\.dkr\.ecr\.' "${files[@]}" 2>/dev/null | sort -u)

	# EC2 instance ids
	n=0
	while IFS= read -r v; do
		[[ -n $v ]] || continue
		n=$((n + 1))
		printf 's/(^|[^A-Za-z0-9-])%s([^A-Za-z0-9]|$)/\\1i-%017x\\2/g\n' "$v" "$n" >>"$script"
		ids+=("$v")
	done < <(grep -Eoh '(^|[^A-Za-z0-9-])i-([0-9a-f]{17}|[0-9a-f]{8})([^A-Za-z0-9]|$)' "${files[@]}" 2>/dev/null |
		grep -Eo 'i-[0-9a-f]+' | sort -u)

	# IPv4 addresses and the EC2 host names made from them (ip-a-b-c-d): one mapping for both
	while IFS= read -r v; do
		v=${v%.}
		IFS=. read -r a b c d rest <<<"$v"
		[[ -z ${rest-} && -n $d ]] || continue
		[[ $a$b$c$d =~ ^[0-9]{4,12}$ ]] || continue
		((10#$a <= 255 && 10#$b <= 255 && 10#$c <= 255 && 10#$d <= 255)) || continue
		case $a in 0 | 127 | 255) continue ;; esac
		[[ $a.$b == 169.254 ]] && continue
		[[ $a.$b == 198.18 ]] && continue
		ip=$((10#$a)).$((10#$b)).$((10#$c)).$((10#$d))
		[[ $ip == "$v" ]] || continue
		[[ -n ${IPMAP[$ip]-} ]] && continue
		i=$((${#ips[@]} + 1))
		IPMAP[$ip]="198.18.$((i / 256)).$((i % 256))"
		ips+=("$ip")
	done < <({
		grep -Eoh '[0-9]+(\.[0-9]+){3,}\.?' "${files[@]}" 2>/dev/null
		grep -Eoh 'ip-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}' "${files[@]}" 2>/dev/null | sed 's/^ip-//; s/-/./g'
		[[ $HOST_SHORT =~ ^ip-([0-9]+)-([0-9]+)-([0-9]+)-([0-9]+)$ ]] && { v=${HOST_SHORT#ip-}; echo "${v//-/.}"; }
	} | sort -u)
	for ip in ${ips[@]+"${ips[@]}"}; do
		fake=${IPMAP[$ip]}
		# twice: adjacent matches share their separator
		v="s/(^|[^0-9.])$(re_escape "$ip")([^0-9.]|\\.([^0-9]|\$)|\$)/\\1$fake\\2/g"
		printf '%s\n%s\n' "$v" "$v" >>"$script"
		printf 's/ip-%s([^0-9]|$)/ip-%s\\1/g\n' "${ip//./-}" "${fake//./-}" >>"$script"
	done

	# this host's own names when they are not ip-a-b-c-d (already mapped above)
	local -a names=("$HOSTNAME_FULL" "$HOST_SHORT")
	[[ -n ${SLURMD_NODENAME-} ]] && names+=("$SLURMD_NODENAME")
	for v in "${names[@]}"; do
		[[ ${#v} -ge 3 && -z ${SEEN[host$v]-} ]] || continue
		SEEN[host$v]=1
		[[ $v =~ ^ip-[0-9]+-[0-9]+-[0-9]+-[0-9]+$ ]] && continue
		[[ $v =~ ^ip-[0-9]+-[0-9]+-[0-9]+-[0-9]+\. ]] && continue
		hosts=$((hosts + 1))
		printf 's/(^|[^A-Za-z0-9_-])%s([^A-Za-z0-9_-]|$)/\\1host-1\\2/g\n' "$(re_escape "$v")" >>"$script"
	done

	for f in "${files[@]}"; do
		sed -r -i -f "$script" "$f"
	done

	{
		echo "# hptriage --redact: what was masked in this bundle (original values are not kept anywhere)"
		echo "# category<TAB>distinct values<TAB>replaced by"
		printf 'ipv4\t%d\t198.18.x.y, one fake per address (consistent within this bundle)\n' "${#ips[@]}"
		printf 'ec2_hostname\t-\tip-a-b-c-d host names follow the ipv4 mapping (ip-198-18-x-y)\n'
		printf 'hostname\t%d\thost-1 (this host'"'"'s own names; one shorter than 3 characters only in meta.env and the bundle name)\n' "$hosts"
		printf 'instance_id\t%d\ti-0000000000000000N\n' "${#ids[@]}"
		printf 'account_id\t%d\t00000000000N (in account/owner keys and ECR hosts)\n' "${#accts[@]}"
		printf 'arn\t%d\tarn:aws:<service>:region:000000000000:redacted-N\n' "${#arns[@]}"
		printf 'files_scanned\t%d\ttext files; binary files are not scanned: %d\n' "${#files[@]}" "${#binary[@]}"
		echo "# Not masked: GPU serials/UUIDs (needed for RMA), MAC addresses, IPv6, file names under extra/."
	} >"$BUNDLE/redaction.txt"
	REDACT_SCRIPT=$script
}

# redact_str VALUE: VALUE through the redaction rules; host-1 when they leave it unchanged
redact_str() {
	local v=$1 r
	r=$v
	[[ -n $REDACT_SCRIPT ]] && r=$(printf '%s\n' "$v" | sed -r -f "$REDACT_SCRIPT")
	[[ $r == "$v" ]] && r=host-1
	printf '%s' "$r"
}

REDACT_SCRIPT=""
META_HOSTNAME=$HOSTNAME_FULL
if ((REDACT)); then
	redact_bundle
	META_HOSTNAME=$(redact_str "$HOSTNAME_FULL")
	if [[ $NODE_FROM == host ]]; then
		NODE=$(redact_str "$NODE")
		NODE=${NODE//[^A-Za-z0-9._-]/_}
	fi
	say "redacted: $(grep -v '^#' "$BUNDLE/redaction.txt" | cut -f1,2 | tr '\t\n' '= ')"
fi

# ---------------------------------------------------------------------------------------------
# meta.env (host facts; IMDS facts when --imds worked).  Written after --redact: the IMDS values
# come from the redacted cmd/imds.txt and the host name is the masked one.

meta_kv() { printf '%s=%s\n' "$1" "$(one_line "$2")" >>"$BUNDLE/meta.env"; }

OS_RELEASE=""
if [[ -r /etc/os-release ]]; then
	while IFS= read -r line; do
		if [[ $line == PRETTY_NAME=* ]]; then
			OS_RELEASE=${line#PRETTY_NAME=}
			OS_RELEASE=${OS_RELEASE#\"}
			OS_RELEASE=${OS_RELEASE%\"}
		fi
	done </etc/os-release
fi
NPROC=$(nproc 2>/dev/null || echo "")

{
	echo "# hptriage bundle metadata (KEY=VALUE; parsed, never sourced)"
} >"$BUNDLE/meta.env"
meta_kv bundle_format "$BUNDLE_FORMAT"
meta_kv node "$NODE"
meta_kv collected_at "$COLLECTED_AT"
meta_kv hostname "$META_HOSTNAME"
meta_kv kernel "$(uname -r)"
meta_kv os_release "$OS_RELEASE"
meta_kv nproc "$NPROC"
meta_kv collector_version "$COLLECTOR_VERSION"
meta_kv collector_timeout_s "$T"
meta_kv collector_euid "$(id -u 2>/dev/null || echo "")"
if ((IMDS)) && [[ -s $BUNDLE/cmd/imds.txt ]]; then
	while IFS= read -r line; do
		k=${line%%=*}
		v=${line#*=}
		case $k in
		instance_id | instance_type | availability_zone | az_id | placement_group) [[ -n $v ]] && meta_kv "$k" "$v" ;;
		esac
	done <"$BUNDLE/cmd/imds.txt"
fi
((REDACT)) && meta_kv redacted 1


# ---------------------------------------------------------------------------------------------
# --max-size: cut the largest captured files until the contents fit (meta and manifest excluded)

enforce_max_size() {
	local total excess f s cut i
	total=$(bundle_bytes)
	((total > MAX_BYTES)) || return 0
	excess=$((total - MAX_BYTES + 65536)) # room for the manifest
	say "bundle contents $total bytes exceed --max-size ${MAX_MB} MB; cutting the largest files"
	while ((excess > 0)); do
		local big="" bigs=0
		for i in "${!R_PATH[@]}"; do
			f=$BUNDLE/${R_PATH[$i]}
			[[ -f $f ]] || continue
			s=$(file_size "$f")
			((s > bigs)) && { big=$i; bigs=$s; }
		done
		[[ -n $big && $bigs -gt 0 ]] || break
		cut=$((excess < bigs ? excess : bigs))
		f=$BUNDLE/${R_PATH[$big]}
		head -c $((bigs - cut)) "$f" >"$f.cap" && mv -f "$f.cap" "$f"
		case ",${R_NOTE[$big]}," in *,truncated,*) ;; *) R_NOTE[big]=${R_NOTE[$big]:+${R_NOTE[$big]},}truncated ;; esac
		excess=$((excess - cut))
	done
}
enforce_max_size

# ---------------------------------------------------------------------------------------------
# manifest.tsv

{
	printf 'path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote\n'
	for i in "${!R_PATH[@]}"; do
		f=$BUNDLE/${R_PATH[$i]}
		if [[ -f $f ]]; then
			bytes=$(file_size "$f")
			sum=$(sha256sum <"$f")
			sum=${sum%% *}
		else
			bytes=0
			sum=-
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${R_PATH[$i]}" "${R_KIND[$i]}" "${R_RC[$i]}" "${R_DUR[$i]}" \
			"$bytes" "$sum" "${R_CMD[$i]}" "${R_NOTE[$i]}"
	done
} >"$BUNDLE/manifest.tsv"
# the command column can name hosts and paths too
[[ -n $REDACT_SCRIPT ]] && sed -r -i -f "$REDACT_SCRIPT" "$BUNDLE/manifest.tsv"

ELAPSED_NS=$(($(now_ns) - T_START))
meta_kv collection_seconds "$(fmt_s "$ELAPSED_NS")"

# ---------------------------------------------------------------------------------------------
# tar.gz + .sha256

NAME=hptriage-$NODE-$STAMP
mv "$BUNDLE" "$WORK/$NAME"
BUNDLE=$WORK/$NAME
TARBALL=$OUT_DIR/$NAME.tar.gz
# meta.env and manifest.tsv first, so a reader streaming the archive knows every kind up front
MEMBERS=("$NAME/meta.env" "$NAME/manifest.tsv")
shopt -s dotglob nullglob
for f in "$BUNDLE"/*; do
	case ${f##*/} in meta.env | manifest.tsv) ;; *) MEMBERS+=("$NAME/${f##*/}") ;; esac
done
shopt -u dotglob nullglob
if ! tar -C "$WORK" --owner=0 --group=0 --numeric-owner -czf "$WORK/$NAME.tar.gz" "${MEMBERS[@]}"; then
	printf 'collector.sh: tar failed; no bundle written\n' >&2
	exit 1
fi
mv -f "$WORK/$NAME.tar.gz" "$TARBALL" || { printf 'collector.sh: cannot write %s\n' "$TARBALL" >&2; exit 1; }
(cd "$OUT_DIR" && sha256sum "$NAME.tar.gz" >"$WORK/sum" && mv -f "$WORK/sum" "$NAME.tar.gz.sha256") ||
	printf 'collector.sh: warning: could not write %s.sha256\n' "$TARBALL" >&2

ELAPSED_NS=$(($(now_ns) - T_START))
say "$PROBES_RUN probes ($PROBES_TIMED_OUT timed out, $PROBES_FAILED failed) in $(fmt_s "$ELAPSED_NS") s" \
	"(bound: ${T} s x $BOUNDED_RUNS bounded runs = $((T * BOUNDED_RUNS)) s, plus packing)"
printf '%s\n' "$TARBALL"
exit 0
