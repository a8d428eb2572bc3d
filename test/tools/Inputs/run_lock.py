"""One writer per run: starts DRIVER's `train` writing DIR/run.ckpt, waits
until it holds DIR/run.ckpt.lock, and checks that a second run (and, where
the driver has it, a --resume) on the same --out is refused naming the
holder's pid and touching none of its files; then kills the holder with
SIGKILL and checks that a new writer is accepted at once (the kernel
released the lock). Prints one line per check for FileCheck.

usage: run_lock.py DRIVER DIR"""
import os
import signal
import subprocess
import sys
import time

driver, folder = sys.argv[1], sys.argv[2]
out = os.path.join(folder, "run.ckpt")

if driver == "nmt":
    train = ["nmt", "train", "--task-train", "3000", "--task-valid", "10",
             "--emb", "16", "--hidden", "32", "--att", "16", "--readout", "16",
             "--max-tokens", "200", "--save-every", "2", "--epochs", "100"]
elif driver == "cws":
    train = ["cws", "train", "--train", os.path.join(folder, "seg.utf8"),
             "--emb", "8", "--hidden", "8", "--batch", "4", "--save-every", "2",
             "--epochs", "1000"]
else:
    train = ["nli", "train", "--train", os.path.join(folder, "train"),
             "--valid", os.path.join(folder, "dev"), "--emb", "8", "--hidden",
             "8", "--batch", "4", "--save-every", "2", "--epochs", "1000",
             "--patience", "0"]
train += ["--threads", "1", "--no-progress", "--out", out]


def holder_pid():
    """The pid the lock file records, once the holder has written it."""
    try:
        with open(out + ".lock") as f:
            text = f.read().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def files():
    """The run's files and their bytes."""
    found = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("run.ckpt"):
            with open(os.path.join(folder, name), "rb") as f:
                found[name] = f.read()
    return found


def stop(process):
    """SIGSTOP, then wait until every thread of it has stopped: kill()
    returns before a thread running on another core stops, and a save in
    flight could still write between two reads of the files."""
    process.send_signal(signal.SIGSTOP)
    tasks = f"/proc/{process.pid}/task"
    deadline = time.time() + 10
    while time.time() < deadline:
        states = []
        for task in os.listdir(tasks):
            try:
                with open(os.path.join(tasks, task, "stat")) as f:
                    states.append(f.read().rsplit(") ", 1)[1][0])
            except OSError:
                pass  # a thread that ended meanwhile
        if all(state in "tT" for state in states):
            return
        time.sleep(0.01)


holder = subprocess.Popen(train, stderr=subprocess.DEVNULL)
deadline = time.time() + 120
# Each saves after two updates. Wait for a checkpoint so that --resume has
# one to take over.
while time.time() < deadline and not (
        holder_pid() == holder.pid and os.path.exists(out)):
    if holder.poll() is not None:
        sys.exit(f"the holder ended early (rc {holder.returncode})")
    time.sleep(0.05)
print("holder locked:", holder_pid() == holder.pid)

for extra in (["--seed", "2"], ["--resume"], ["--force"]):
    stop(holder)  # its files stay as they are
    before = files()
    second = subprocess.run(train + extra, capture_output=True, text=True)
    after = files()
    holder.send_signal(signal.SIGCONT)
    refused = f"is being written by another run (process {holder.pid}"
    print(" ".join(extra), "refused:", second.returncode != 0 and
          refused in second.stderr, "| files untouched:", before == after)
    if refused not in second.stderr:
        print(second.stderr)

holder.send_signal(signal.SIGKILL)
holder.wait()
# The lock file stays behind a killed run; its lock does not.
resumed = subprocess.Popen(train + ["--resume"], stderr=subprocess.PIPE,
                           text=True)
deadline = time.time() + 60
while time.time() < deadline and holder_pid() != resumed.pid:
    if resumed.poll() is not None:
        break
    time.sleep(0.05)
print("resumed after kill -9:", holder_pid() == resumed.pid)
resumed.send_signal(signal.SIGKILL)
resumed.wait()
