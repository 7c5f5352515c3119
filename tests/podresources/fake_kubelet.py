#!/usr/bin/python3
"""A fake kubelet PodResources server (gRPC v1 `List`) on a unix socket, for tocsin's tests.

    fake_kubelet.py --socket PATH --answer FILE

FILE is read again on every call (a test changes the answer by rewriting it), JSON:
    {"pods": [{"namespace": "ml", "name": "llm-0",
               "containers": [{"name": "trainer",
                               "devices": [{"resource": "nvidia.com/gpu",
                                            "ids": ["GPU-..."]}]}]}],
     "synth_pods": 0, "synth_devices": 0, "long": 0}
`synth_pods` adds that many pods named p-<i> (hostile: more than tocsin keeps), each with
`synth_devices` devices; `long` > 0 adds a pod whose name is that many characters. Every
container also carries cpu_ids (packed) and every device a topology message, so the client must
skip fields it does not read. The answer is encoded by hand in protobuf's wire format with the
field numbers of src/podresources/api.proto.

Prints "ready PID" once serving; stops on SIGTERM (testing::FakeKubelet also has it killed
when the test process dies).
"""
import argparse
import json
import os
import signal
import threading
from concurrent import futures

import grpc


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def container(c):
    out = field(1, c.get("name", "c"))
    for d in c.get("devices", []):
        dev = field(1, d["resource"])
        for i in d["ids"]:
            dev += field(2, i)
        dev += field(3, field(1, varint(1 << 3 | 0) + varint(1)))  # topology {nodes {ID: 1}}
        out += field(2, dev)
    out += field(3, b"".join(varint(i) for i in (0, 1, 2, 3)))  # cpu_ids, packed
    return out


def pod(p):
    out = field(1, p["name"]) + field(2, p["namespace"])
    for c in p.get("containers", []):
        out += field(3, container(c))
    return out


def answer(path):
    with open(path) as f:
        spec = json.load(f)
    pods = list(spec.get("pods", []))
    for i in range(spec.get("synth_pods", 0)):
        ids = ["0000:%02x:00.%d" % (i % 256, j % 8) for j in range(spec.get("synth_devices", 0))]
        pods.append({"namespace": "synth", "name": "p-%d" % i,
                     "containers": [{"name": "c", "devices": [{"resource": "x/y", "ids": ids}]}]})
    if spec.get("long", 0):
        pods.append({"namespace": "ml", "name": "x" * spec["long"], "containers": []})
    return b"".join(field(1, pod(p)) for p in pods)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--answer", required=True)
    args = ap.parse_args()

    def list_pods(request, context):
        return answer(args.answer)

    handler = grpc.method_handlers_generic_handler(
        "v1.PodResourcesLister", {"List": grpc.unary_unary_rpc_method_handler(list_pods)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         options=[("grpc.max_send_message_length", 64 << 20)])
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + args.socket)
    server.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print("ready %d" % os.getpid(), flush=True)
    done.wait()
    server.stop(0)


if __name__ == "__main__":
    main()
