#!/usr/bin/env bash
# The cluster commands of docs/slurm.md against a real Slurm: a one-node cluster of its own (munged,
# slurmctld and slurmd with their own config, ports, state and logs in a temporary directory), started here
# and stopped here whatever happens. It installs nothing (`./setup.sh --slurm` does); where the daemons are not
# installed it prints the skip marker and succeeds, and ctest reports it skipped, unless
# DBENCH_REQUIRE_SLURM=1.
#
#   tests/slurm/slurm_test.sh DBENCH SOURCE_DIR
#
# Checks, with the commands as docs/slurm.md writes them:
#   1. `srun --mpi=pmix -O -n 4 dbench train` writes the same metrics.csv, schedule.csv and replica_norms.csv
#      as `dbench train --local 4`, byte for byte; so do mpirun inside salloc and experiments/slurm/train.sbatch.
#   2. A task with --cpus-per-task=1 runs `dbench simulate` and `dbench sweep` on one thread.
#   3. A 2-task job array of experiments/slurm/sweep_shard.sbatch, then experiments/slurm/sweep_merge.sbatch
#      as a dependent job, gives the summary.csv of an unsharded `dbench sweep` (wall_seconds aside).
#   4. A worker killed under srun ends the step with a non-zero status, writes no results directory and
#      leaves no dbench process; neither does scancel of a running training job. srun without --mpi=pmix
#      fails with a line that says to use it.
set -uo pipefail

# DBENCH_REQUIRE_SLURM=1 (CI) turns a skip into a failure.
skip() {
  if [[ "${DBENCH_REQUIRE_SLURM:-0}" == 1 ]]; then
    echo "FAIL (DBENCH_REQUIRE_SLURM=1): $*"
    exit 1
  fi
  echo "[dbench-skip] $*"
  exit 0
}
if [[ $# -ne 2 ]]; then
  echo "usage: $0 DBENCH SOURCE_DIR" >&2
  exit 2
fi
dbench_bin=$(realpath "$1")
src=$(realpath "$2")
for tool in munged mungekey slurmctld slurmd srun sbatch scontrol sinfo squeue scancel; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    skip "$tool is not installed (./setup.sh --slurm installs Slurm and munge)"
  fi
done
if [[ $(id -u) -ne 0 ]]; then
  skip "slurmd launches jobs only when it runs as root"
fi
if ! command -v python3 >/dev/null 2>&1; then
  skip "python3 is needed to find free ports"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dbench-slurm.XXXXXX")
daemons=()
failures=0

stop_everything() {
  # Jobs first (their steps end through slurmd), then the daemons, newest first.
  if [[ -n "${SLURM_CONF:-}" ]]; then
    scancel --quiet --full --user="$(id -un)" 2>/dev/null || true
  fi
  for ((i = ${#daemons[@]} - 1; i >= 0; --i)); do
    kill -TERM "${daemons[i]}" 2>/dev/null || true
  done
  for pid in "${daemons[@]}"; do
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  pkill -KILL -f "$work/" 2>/dev/null || true
  if [[ $failures -ne 0 && -d "$work/log" ]]; then
    for log in "$work"/log/*.log; do
      echo "---- last lines of $log"
      tail -n 20 "$log"
    done
  fi
  rm -rf "$work"
}
trap stop_everything EXIT
trap 'exit 130' INT TERM HUP

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- a one-node Slurm of its own
mkdir -p "$work"/{state,spool,log,run}
mungekey --create --keyfile="$work/munge.key" || exit 1
chmod 400 "$work/munge.key"
munged --foreground --force --socket="$work/munge.socket" --key-file="$work/munge.key" \
  --pid-file="$work/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munged.seed" \
  >/dev/null 2>&1 &
daemons+=($!)

node=dbench1
host=$(hostname -s)
cpus=$(nproc --all)
cat >"$work/slurm.conf" <<EOF
ClusterName=dbenchtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
MailProg=/bin/true
NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=dbench Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"
for _ in $(seq 50); do
  [[ -S "$work/munge.socket" ]] && break
  sleep 0.1
done
slurmctld -D -c -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
daemons+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
daemons+=($!)
ready=0
for _ in $(seq 120); do
  if [[ "$(sinfo -h -n "$node" -o %T 2>/dev/null)" == idle ]]; then
    ready=1
    break
  fi
  sleep 0.5
done
if [[ $ready -ne 1 ]]; then
  failures=1
  echo "FAIL: the test's Slurm did not come up within 60 s; its logs follow"
  exit 1
fi
echo "slurm: one node, $cpus CPUs, config $SLURM_CONF"

# The commands below are docs/slurm.md's, with `dbench` from this build.
mkdir -p "$work/bin"
ln -s "$dbench_bin" "$work/bin/dbench"
export PATH="$work/bin:$PATH"
cd "$work/run" || exit 1
cat >train.toml <<EOF
# the embedded defaults (MLP on Fashion-MNIST), Ada on 4 workers for 100 iterations
[train]
workers = 4
iterations = 100
eval_every = 25
[algorithm]
kind = "dpsgd"
graph = "ada"
EOF
CONFIG=train.toml

wait_for_job() {  # JOBID SECONDS: until the job (every task of an array) has left the queue
  local id=$1 limit=$2
  for _ in $(seq $((limit * 2))); do
    [[ -z "$(squeue -h -j "$id" 2>/dev/null)" ]] && return 0
    sleep 0.5
  done
  return 1
}

job_state() {  # JOBID: the job's state, e.g. COMPLETED or FAILED
  scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort -u | tr '\n' ' '
}

leftover_workers() {  # PATTERN: dbench processes still alive whose command line matches
  pgrep -f -a "dbench.*$1" | grep -v pgrep || true
}

# ---- 1. srun and sbatch against --local
echo "== srun --mpi=list"
srun --mpi=list 2>&1 | sed 's/^/  /'
if ! srun --mpi=list 2>&1 | grep -qw pmix; then
  fail "this Slurm has no pmix MPI plugin (srun --mpi=list)"
fi

echo "== srun --mpi=pmix -O -n 4 dbench train CONFIG --out srun"
timeout 300 srun --mpi=pmix -O -n 4 dbench train "$CONFIG" --out srun || fail "srun train exited $?"
echo "== dbench train CONFIG --local 4 --out local"
timeout 300 dbench train "$CONFIG" --local 4 --out local --quiet || fail "train --local 4 exited $?"
echo "== salloc -N 1 -n 4 -O mpirun -n 4 dbench train CONFIG --out mpirun"
# Open MPI refuses root unless told; a user's job never runs as root.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 \
  salloc -N 1 -n 4 -O mpirun -n 4 dbench train "$CONFIG" --out mpirun --quiet || fail "salloc mpirun exited $?"
echo "== sbatch --parsable -N 1 -n 4 -O experiments/slurm/train.sbatch CONFIG sbatch"
train_job=$(sbatch --parsable -N 1 -n 4 -O "$src/experiments/slurm/train.sbatch" "$CONFIG" sbatch)
wait_for_job "$train_job" 300 || fail "the train.sbatch job $train_job did not end within 5 minutes"
state=$(job_state "$train_job")
if [[ "$state" != "COMPLETED " ]]; then
  fail "the train.sbatch job ended $state"
  cat "dbench-train-$train_job.out"
fi
for run in srun mpirun sbatch; do
  for file in metrics.csv schedule.csv replica_norms.csv; do
    if cmp -s "local/$file" "$run/$file"; then
      echo "  $run/$file = local/$file ($(wc -l <"local/$file") lines)"
    else
      fail "$run/$file differs from local/$file"
    fi
  done
done

# ---- 2. threads follow the allocation
echo "== srun -n 1 --cpus-per-task=1 dbench simulate CONFIG --out simulate"
threads_line=$(timeout 300 srun -n 1 --cpus-per-task=1 dbench simulate "$CONFIG" --out simulate 2>&1 | grep -o ', [0-9]* threads*$' | head -n 1)
if [[ "$threads_line" == ", 1 thread" ]]; then
  echo "  simulate ran on 1 thread"
else
  fail "dbench simulate under --cpus-per-task=1 ran '${threads_line:-no thread line}', expected ', 1 thread'"
fi

# ---- 3. a sharded sweep over a job array, merged by a dependent job, against an unsharded run
cat >sweep.toml <<EOF
name = "slurm"
[set]
"train.iterations" = 20
"train.eval_every" = 10
"train.eval_samples" = 500
"train.replica_eval_samples" = 64
"platform.timing_model" = "mlp"
[grid]
algorithm = ["ring", "centralized"]
"train.workers" = [8]
seed = [1, 2]
EOF
SWEEP=sweep.toml
echo "== jid=\$(sbatch --parsable --array=1-2 --cpus-per-task=1 experiments/slurm/sweep_shard.sbatch SWEEP sharded)"
jid=$(sbatch --parsable --array=1-2 --cpus-per-task=1 "$src/experiments/slurm/sweep_shard.sbatch" "$SWEEP" sharded)
echo "== sbatch --dependency=afterok:\$jid experiments/slurm/sweep_merge.sbatch SWEEP sharded"
merge=$(sbatch --dependency=afterok:"$jid" "$src/experiments/slurm/sweep_merge.sbatch" "$SWEEP" sharded |
  sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p')
[[ -n "$merge" ]] || fail "sbatch did not submit the merge job"
echo "== dbench sweep SWEEP --out whole (unsharded, meanwhile)"
timeout 600 dbench sweep "$SWEEP" --out whole --no-report --quiet >/dev/null || fail "unsharded sweep exited $?"
if ! wait_for_job "$merge" 600; then
  fail "the merge job $merge did not finish within 10 minutes"
fi
for id in "${jid}_1" "${jid}_2" "$merge"; do
  state=$(job_state "$id")
  [[ "$state" == "COMPLETED " ]] || fail "job $id ended $state"
done
for out in dbench-sweep-"${jid}"_*.out dbench-merge-"${merge}".out; do
  echo "---- $out"
  sed 's/^/  /' "$out"
done
for shard in 1 2; do
  if grep -q "shard $shard/2: .* 1 thread each" "dbench-sweep-${jid}_${shard}.out"; then
    echo "  shard $shard ran on 1 thread"
  else
    fail "shard $shard of the job array did not run on 1 thread (see its output above)"
  fi
  grep -q "dbench sweep $SWEEP --out sharded" "dbench-sweep-${jid}_${shard}.out" \
    || fail "shard $shard did not name the merge command"
done
grep -q "4 finished earlier, 0 to run" "dbench-merge-${merge}.out" || fail "the merge job ran runs again"
without_wall() {  # CSV: the file without its wall_seconds column
  python3 - "$1" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
drop = rows[0].index("wall_seconds")
for row in rows:
    print(",".join(row[:drop] + row[drop + 1:]))
EOF
}
if [[ -f sharded/summary.csv && -f whole/summary.csv ]] &&
  diff <(without_wall sharded/summary.csv) <(without_wall whole/summary.csv); then
  echo "  merged summary.csv = unsharded summary.csv ($(($(wc -l <whole/summary.csv) - 1)) runs, wall_seconds aside)"
else
  fail "the merged summary.csv differs from the unsharded one"
fi
[[ -f sharded/report.html ]] || fail "the merge job wrote no report"

# ---- 4. failures: a killed worker, scancel
echo "== srun --mpi=pmix -O -n 4 dbench train CONFIG --inject-kill 2:40 --out killed"
start=$SECONDS
timeout 300 srun --mpi=pmix -O -n 4 dbench train "$CONFIG" --inject-kill 2:40 --out killed --quiet >killed.out 2>&1
status=$?
sed 's/^/  /' killed.out
echo "  exit $status after $((SECONDS - start)) s"
[[ $status -ne 0 && $status -ne 124 ]] || fail "srun with a killed worker exited $status"
[[ ! -e killed ]] || fail "a run with a killed worker wrote a results directory"
sleep 1
[[ -z "$(leftover_workers '--out killed')" ]] || fail "dbench workers outlived the failed step: $(leftover_workers '--out killed')"

echo "== srun -n 2 dbench train CONFIG (no --mpi: the site default, none here)"
timeout 120 srun -n 2 dbench train "$CONFIG" --set train.workers=2 --out no-pmix --quiet >no-pmix.out 2>&1
status=$?
head -n 3 no-pmix.out | sed 's/^/  /'
[[ $status -ne 0 && $status -ne 124 ]] || fail "srun without PMIx exited $status"
grep -q "dbench: srun started these 2 tasks with --mpi=none, .* run srun --mpi=pmix" no-pmix.out \
  || fail "srun without PMIx did not say to use srun --mpi=pmix"

echo "== scancel of a running sbatch train job"
long=$(sbatch --parsable -N 1 -n 4 -O "$src/experiments/slurm/train.sbatch" "$CONFIG" long \
  --set train.iterations=1000000)
for _ in $(seq 120); do
  [[ -n "$(leftover_workers '--out long')" ]] && break
  sleep 0.5
done
[[ -n "$(leftover_workers '--out long')" ]] || fail "the long training job never started its workers"
scancel "$long"
wait_for_job "$long" 60 || fail "scancel: job $long still queued after 60 s"
sleep 1
[[ -z "$(leftover_workers '--out long')" ]] || fail "dbench workers outlived scancel: $(leftover_workers '--out long')"
[[ ! -e long ]] || fail "a cancelled run wrote a results directory"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all Slurm checks passed"
