"""Create a topic with every given topic config through kafka-python's admin client.

usage: topic_configs.py HOST:PORT TOPIC NAME=VALUE...
Creates TOPIC (CreateTopics with the configs), then checks with DescribeConfigs that each is a
topic override with its value. Prints OK on success, exits 1 otherwise.
"""
import sys

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic


def main():
    addr, topic = sys.argv[1], sys.argv[2]
    configs = dict(arg.split("=", 1) for arg in sys.argv[3:])
    admin = KafkaAdminClient(bootstrap_servers=addr)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs=configs)])
    resp = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    admin.close()
    described = {}
    for r in resp:
        for res in r.resources:
            error_code, entries = res[0], res[4]
            if error_code != 0:
                print("describe error %d" % error_code)
                sys.exit(1)
            for e in entries:
                described[e[0]] = e[1]
    bad = {k: (described.get(k), v) for k, v in configs.items() if described.get(k) != v}
    if bad:
        print("described differently (got, want): %r" % bad)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
