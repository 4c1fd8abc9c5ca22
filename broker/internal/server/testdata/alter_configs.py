"""Replace a topic's configs through kafka-python's alter_configs (AlterConfigs, not incremental).

usage: alter_configs.py HOST:PORT TOPIC NAME=VALUE...
Sends AlterConfigs with exactly the given configs, then checks with DescribeConfigs that each
has its value. Prints OK on success, exits 1 otherwise.
"""
import sys

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType


def main():
    addr, topic = sys.argv[1], sys.argv[2]
    configs = dict(arg.split("=", 1) for arg in sys.argv[3:])
    admin = KafkaAdminClient(bootstrap_servers=addr)
    resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
    for res in resp.resources:
        if res[0] != 0:
            print("alter error %d: %s" % (res[0], res[1]))
            sys.exit(1)
    resp = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    admin.close()
    described = {}
    for r in resp:
        for res in r.resources:
            for e in res[4]:
                described[e[0]] = e[1]
    bad = {k: (described.get(k), v) for k, v in configs.items() if described.get(k) != v}
    if bad:
        print("described differently (got, want): %r" % bad)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
