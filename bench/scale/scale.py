#!/usr/bin/python3
"""Many partitions on three brokers (issue 28): creates TOPICS topics of PARTITIONS partitions
at replication factor RF on a real ZooKeeper and three spoold processes, 10 topics per
CreateTopics call as the issue's script did, and reports: time until every partition is led
with a full ISR, Metadata-for-all latency (p50/p99 of 50 calls), RSS and open descriptors per
broker, after kill -9 of one broker, the time until every partition has a live leader, and
then the time a second broker takes to stop on SIGTERM (controlled shutdown, logs closed).

    go build -o /tmp/spoold ./broker/cmd/spoold
    /usr/bin/python3 bench/scale/scale.py --spoold /tmp/spoold --topics 100 --partitions 100
"""
import argparse, os, shutil, signal, socket, subprocess, sys, tempfile, time
from confluent_kafka.admin import AdminClient, NewTopic

ZK_JARS = ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-handler.jar",
           "netty-common.jar", "netty-transport.jar", "netty-buffer.jar", "netty-codec.jar", "netty-resolver.jar",
           "netty-transport-native-epoll.jar", "netty-transport-native-unix-common.jar", "metrics-core.jar",
           "snappy-java.jar"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=60, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"process {proc.args[0]} exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"port {port} not reachable after {timeout}s")


def proc_stats(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


PPROF_PORT = free_port()
PPROF_PORT2 = free_port()


def pprof_args(a, node):
    if not a.profile:
        return []
    if node == 1:
        return ["--set", f"spool.pprof.listener=127.0.0.1:{PPROF_PORT}"]
    if node == 2:
        return ["--set", f"spool.pprof.listener=127.0.0.1:{PPROF_PORT2}"]
    return []


def start_profile(a):
    """Fetches a 20 s CPU profile and, 5 s and 15 s in, goroutine dumps of broker 1 (pprof)."""
    import threading, urllib.request
    os.makedirs(a.profile, exist_ok=True)

    def get(path, out, delay=0):
        time.sleep(delay)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PPROF_PORT}{path}", timeout=60) as r, open(out, "wb") as f:
                f.write(r.read())
        except OSError as e:  # the run ended first
            print(f"profile {path}: {e}", file=sys.stderr)

    threading.Thread(target=get, args=("/debug/pprof/profile?seconds=20", f"{a.profile}/cpu.pprof"), daemon=True).start()
    for d in (5, 15):
        threading.Thread(target=get, args=("/debug/pprof/goroutine?debug=1", f"{a.profile}/goroutines-{d}s.txt", d),
                         daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spoold", required=True)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--keep", action="store_true", help="keep the data directories")
    ap.add_argument("--profile", help="directory for broker 1's CPU profile and goroutine dumps while a CreateTopics call runs")
    ap.add_argument("--profile-at", type=int, default=10, help="the topic count at which the profiled CreateTopics call starts (default 10: the second call)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="spool-scale-")
    procs = []
    try:
        zport = free_port()
        os.makedirs(f"{work}/zk")
        with open(f"{work}/zoo.cfg", "w") as f:
            f.write(f"tickTime=500\ninitLimit=20\nsyncLimit=10\ndataDir={work}/zk\nclientPort={zport}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxSessionTimeout=60000\n")
        cp = ":".join("/usr/share/java/" + j for j in ZK_JARS)
        procs.append(subprocess.Popen(["java", "-Xmx512m", "-XX:+UseSerialGC", "-cp", cp,
                                       "org.apache.zookeeper.server.ZooKeeperServerMain", f"{work}/zoo.cfg"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_port(zport)
        brokers = {}
        for node in (1, 2, 3):
            port = free_port()
            log = open(f"{work}/spoold-{node}.log", "w")
            p = subprocess.Popen([a.spoold, "--data-dir", f"{work}/data-{node}", "--node-id", str(node),
                                  "--listen", f"127.0.0.1:{port}", "--zookeeper", f"127.0.0.1:{zport}/spool",
                                  "--log-level", "info"] + pprof_args(a, node), stdout=subprocess.DEVNULL, stderr=log)
            procs.append(p)
            brokers[node] = (p, port)
            try:
                wait_port(port, proc=p)
            except SystemExit:
                log.flush()
                with open(f"{work}/spoold-{node}.log") as f:
                    print("".join(f.readlines()[-20:]), file=sys.stderr)
                raise  # one at a time: three at once on two cores can miss their ZooKeeper deadline
        bootstrap = ",".join(f"127.0.0.1:{port}" for _, port in brokers.values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        deadline = time.time() + 60
        while len(admin.list_topics(timeout=10).brokers) < 3:
            if time.time() > deadline:
                sys.exit("three brokers not registered within 60s")
            time.sleep(0.2)

        total = a.topics * a.partitions
        began = time.time()
        names = [f"scale-{i:03d}" for i in range(a.topics)]
        failed = 0
        for i in range(0, len(names), 10):
            t0 = time.time()
            if a.profile and i == a.profile_at:
                start_profile(a)
            futs = admin.create_topics([NewTopic(n, a.partitions, a.rf) for n in names[i:i + 10]], request_timeout=120)
            for n, fut in futs.items():
                try:
                    fut.result()
                except Exception as e:  # reported, and counted
                    failed += 1
                    print(f"create {n}: {e}", flush=True)
            print(f"topics {i + 10:4d}/{a.topics}: {time.time() - t0:6.1f}s this call, {time.time() - began:7.1f}s total",
                  flush=True)
        created = time.time() - began

        def led_full(exclude=None):
            md = admin.list_topics(timeout=60)
            n = 0
            for name in names:
                t = md.topics.get(name)
                if t is None or t.error is not None:
                    continue
                for p in t.partitions.values():
                    if p.leader >= 0 and p.leader != exclude and (exclude is not None or len(p.isrs) == a.rf):
                        n += 1
            return n

        while (n := led_full()) < total:
            if time.time() - began > a.timeout:
                print(f"timeout: {n}/{total} partitions led with a full ISR")
                break
            time.sleep(1)
        full = time.time() - began
        print(f"created {a.topics - failed}/{a.topics} topics in {created:.1f}s; {led_full()}/{total} partitions "
              f"led with a full ISR after {full:.1f}s", flush=True)

        lat = []
        for _ in range(50):
            t0 = time.perf_counter()
            admin.list_topics(timeout=60)
            lat.append((time.perf_counter() - t0) * 1000)
        lat.sort()
        print(f"Metadata for all topics: p50 {lat[24]:.0f} ms, p99 {lat[48]:.0f} ms (50 calls, each over {total} partitions)")
        for node, (p, _) in brokers.items():
            rss, fds = proc_stats(p.pid)
            print(f"broker {node}: RSS {rss} MiB, {fds} open files")

        victim, _ = brokers[3]
        victim.send_signal(signal.SIGKILL)
        t0 = time.time()
        admin = AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{brokers[n][1]}" for n in (1, 2))})
        while (n := led_full(exclude=3)) < total:
            if time.time() - t0 > 300:
                print(f"failover timeout: {n}/{total} partitions led by a live broker")
                break
            time.sleep(0.5)
        print(f"kill -9 of broker 3: every partition led by a live broker after {time.time() - t0:.1f}s")
        stopping, _ = brokers[2]
        t0 = time.time()
        stopping.send_signal(signal.SIGTERM)
        if a.profile:  # where the stop spends its time: goroutine dumps of broker 2
            import threading, urllib.request

            def dump(delay):
                time.sleep(delay)
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{PPROF_PORT2}/debug/pprof/goroutine?debug=1", timeout=10) as r, \
                            open(f"{a.profile}/stop-goroutines-{delay}s.txt", "wb") as f:
                        f.write(r.read())
                except OSError:
                    pass
            for d in (2, 5, 9):
                threading.Thread(target=dump, args=(d,), daemon=True).start()
        try:
            stopping.wait(timeout=300)
            print(f"SIGTERM of broker 2: exited with {stopping.returncode} after {time.time() - t0:.1f}s")
        except subprocess.TimeoutExpired:
            print("SIGTERM of broker 2: still running after 300s")
        with open(f"{work}/spoold-1.log") as f:
            print(f"broker 1 info log: {sum(1 for _ in f)} lines")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        if a.keep:
            print(f"data kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
