#!/usr/bin/env bash
# Fuzz every parser (or the KINDs named) in turn for SECONDS each (default 600) with atheris; each run's
# figures (libFuzzer's "Done N runs in T second(s)", coverage) go to tests/fuzz/RESULTS.md with the date.
# Usage: scripts/fuzz.sh [SECONDS] [KIND...]   (FUZZ_RESULTS=FILE writes the figures there instead)
# Needs: .venv/bin/pip install atheris.  Crashes are written as crash-<sha1> in the current directory.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
seconds=${1:-600}
py=.venv/bin/python
if [ $# -gt 1 ]; then kinds=${*:2}; else kinds=$($py -c 'import parsers; print(" ".join(parsers.KINDS))'); fi
out=${FUZZ_RESULTS:-tests/fuzz/RESULTS.md}  # parallel runners: give each its own file, merge after
[ -f "$out" ] || printf '# Fuzz runs\n\nAppended by scripts/fuzz.sh (atheris, libFuzzer).\n' >"$out"
printf '\n## %s, %ss per parser, %s\n\n| kind | runs | seconds | execs/s | crashes | new coverage (cov) |\n|---|---|---|---|---|---|\n' \
	"$(date -u '+%Y-%m-%d %H:%M UTC')" "$seconds" "$(uname -srm)" >>"$out"
for kind in $kinds; do
	log=$(mktemp)
	$py tests/fuzz/fuzz_parser.py "$kind" -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1
	rc=$?
	runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' | tail -1)
	cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+')
	crashes=$(grep -c 'Uncaught Python exception' "$log")
	secs=$(grep -Eo 'in [0-9]+ second' "$log" | grep -Eo '[0-9]+' | tail -1)
	rate=$(( ${runs:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))
	printf '| %s | %s | %s | %s | %s (exit %s) | %s |\n' "$kind" "${runs:-?}" "${secs:-?}" "$rate" "$crashes" "$rc" "${cov:-?}" >>"$out"
	if [ "$rc" -ne 0 ]; then grep -A25 'Uncaught Python exception' "$log" | head -40 >>"tests/fuzz/crash-$kind.log"; fi
	rm -f "$log"
	echo "fuzzed $kind: ${runs:-?} runs, rc $rc"
done
