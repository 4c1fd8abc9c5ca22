//! Against a real broker at $SPOOL_BROKERS (sdk-cgo's TestRust starts one): round trips,
//! a group of two consumers, error mapping, and every handle freed on drop.
use spool::config::ClientConfig;
use spool::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use spool::error::{ErrorCode, KafkaError};
use spool::message::{Header, Headers, Message, OwnedHeaders};
use spool::producer::{FutureProducer, FutureRecord};
use spool::util::block_on;
use spool::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Tests run one at a time: each ends by checking that no libspool handle is left, a count
/// shared by the whole process.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn brokers() -> String {
    std::env::var("SPOOL_BROKERS").expect("SPOOL_BROKERS: the broker to test against (sdk-cgo's TestRust sets it)")
}

fn producer() -> FutureProducer {
    ClientConfig::new().set("bootstrap.servers", brokers()).set("linger.ms", "1").create().expect("producer")
}

/// A topic name of its own for each run, so tests can run again against the same broker.
fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

fn assert_no_handles() {
    assert_eq!(spool::handle_count(), 0, "libspool handles left after drop");
}

#[test]
fn round_trip_with_keys_null_keys_and_headers() {
    let _g = serial();
    let topic = &unique("rust-round-trip");
    {
        let p = producer();
        p.create_topic(topic, 3, -1, Duration::from_secs(10)).expect("create topic");
        let headers = OwnedHeaders::new()
            .insert(Header { key: "trace", value: Some("t-1") })
            .insert(Header { key: "nothing", value: None::<&[u8]> });
        let binary: Vec<u8> = (0u8..=255).collect();
        let futures = vec![
            p.send_result(FutureRecord::to(topic).key("alice").payload("hello alice").headers(headers.clone()))
                .unwrap(),
            p.send_result(FutureRecord::<(), _>::to(topic).payload(&binary).partition(2)).unwrap(),
            p.send_result(
                FutureRecord::to(topic).key(&b""[..]).payload(&b""[..]).partition(1).timestamp(1_700_000_000_123),
            )
            .unwrap(),
        ];
        let delivered: Vec<(i32, i64)> = futures.into_iter().map(|f| block_on(f).expect("delivered")).collect();
        assert_eq!(delivered[1], (2, 0));
        assert_eq!(delivered[2], (1, 0));
        assert!((0..3).contains(&delivered[0].0));
        // The async send: the same, awaited.
        let (part, _) = block_on(p.send(FutureRecord::to(topic).key("alice").payload("again"), Duration::ZERO))
            .expect("second delivery");
        assert_eq!(part, delivered[0].0, "the same key went to another partition");

        let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", brokers()).create().expect("consumer");
        let mut tpl = TopicPartitionList::new();
        for part in 0..3 {
            tpl.add_partition_offset(topic, part, Offset::Beginning).unwrap();
        }
        c.assign(&tpl).expect("assign");
        let mut got = BTreeMap::new();
        while got.len() < 4 {
            let m = match c.poll(Duration::from_secs(10)) {
                Some(r) => r.expect("poll"),
                None => panic!("timed out after {} records", got.len()),
            };
            assert_eq!(m.topic(), topic);
            assert!(m.timestamp().to_millis().unwrap() > 0);
            got.insert((m.partition(), m.offset()), m.detach());
        }
        let first = &got[&delivered[0]];
        assert_eq!(first.key(), Some(&b"alice"[..]));
        assert_eq!(first.payload_view::<str>(), Some(Ok("hello alice")));
        let hs = first.headers().expect("headers");
        assert_eq!(hs.count(), 2);
        assert_eq!(hs.get(0), Header { key: "trace", value: Some(&b"t-1"[..]) });
        assert_eq!(hs.get(1), Header { key: "nothing", value: None });
        let bin = &got[&(2, 0)];
        assert_eq!(bin.key(), None, "a null key came back non-null");
        assert_eq!(bin.payload(), Some(&binary[..]));
        assert!(bin.headers().is_none());
        let empty = &got[&(1, 0)];
        assert_eq!((empty.key(), empty.payload()), (Some(&b""[..]), Some(&b""[..])));
        assert_eq!(empty.timestamp().to_millis(), Some(1_700_000_000_123), "the timestamp given to the record");
        assert!(first.timestamp().to_millis().unwrap() > 1_700_000_000_123);

        // seek back and read the first record again, borrowed.
        c.seek(topic, delivered[0].0, Offset::Offset(delivered[0].1), Duration::from_secs(1)).expect("seek");
        let again = c.poll(Duration::from_secs(10)).expect("record after seek").expect("poll");
        assert_eq!((again.partition(), again.offset()), delivered[0]);
        assert_eq!(again.key_view::<str>(), Some(Ok("alice")));
        p.delete_topic(topic, Duration::from_secs(10)).expect("delete topic");
    }
    assert_no_handles();
}

/// A new member of group, subscribed to topic, that commits only what it is told to.
fn member(topic: &str, group: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers())
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    c.subscribe(&[topic]).expect("subscribe");
    c
}

/// The offset of the first record of each of topic's two partitions that a new member of
/// group reads.
fn first_offsets(topic: &str, group: &str) -> BTreeMap<i32, i64> {
    let c = member(topic, group);
    let mut first = BTreeMap::new();
    for _ in 0..300 {
        if first.len() == 2 {
            break;
        }
        if let Some(r) = c.poll(Duration::from_millis(100)) {
            let m = r.expect("poll");
            first.entry(m.partition()).or_insert(m.offset());
        }
    }
    first
}

#[test]
fn commit_offsets_and_messages() {
    let _g = serial();
    let topic = &unique("rust-commit");
    let group = &unique("rust-commit-g");
    {
        let p = producer();
        p.create_topic(topic, 2, -1, Duration::from_secs(10)).expect("create topic");
        let values: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
        let futures: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                p.send_result(FutureRecord::<(), _>::to(topic).payload(&v[..]).partition(i as i32 % 2)).unwrap()
            })
            .collect();
        for f in futures {
            block_on(f).expect("delivered");
        }
        assert_eq!(first_offsets(topic, group), BTreeMap::from([(0, 0), (1, 0)]), "nothing committed yet");

        let c = member(topic, group);
        let mut committed = None;
        for _ in 0..300 {
            if let Some(r) = c.poll(Duration::from_millis(100)) {
                let m = r.expect("poll");
                if m.partition() == 0 && m.offset() >= 3 {
                    c.commit_message(&m, CommitMode::Sync).expect("commit_message");
                    committed = Some(m.offset() + 1);
                    break;
                }
            }
        }
        let committed = committed.expect("a record of partition 0 past offset 3");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 1, Offset::Offset(7)).unwrap();
        c.commit(&tpl, CommitMode::Sync).expect("commit");
        let mut bad = TopicPartitionList::new();
        bad.add_partition_offset(topic, 1, Offset::End).unwrap();
        assert_eq!(c.commit(&bad, CommitMode::Sync), Err(KafkaError::ConsumerCommit(ErrorCode::BAD_ARG)));
        drop(c);
        assert_eq!(first_offsets(topic, group), BTreeMap::from([(0, committed), (1, 7)]), "where the commits said");

        // Commits reach the context's commit_callback inside a later poll, in order, a
        // synchronous one's too.
        let c: BaseConsumer<Commits> = ClientConfig::new()
            .set("bootstrap.servers", brokers())
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create_with_context(Commits::default())
            .expect("consumer");
        c.subscribe(&[topic]).expect("subscribe");
        while c.poll(Duration::from_millis(100)).is_none() {} // a member of the group
        let commit = |offset: i64, mode: CommitMode| {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(topic, 1, Offset::Offset(offset)).unwrap();
            c.commit(&tpl, mode).expect("commit");
        };
        commit(4, CommitMode::Sync);
        commit(5, CommitMode::Async);
        commit(6, CommitMode::Async);
        assert!(c.context().calls().is_empty(), "called outside poll");
        for _ in 0..300 {
            if c.context().calls().len() >= 3 {
                break;
            }
            c.poll(Duration::from_millis(100));
        }
        let want = |o: i64| (Ok(()), vec![(topic.to_string(), 1, Offset::Offset(o))]);
        assert_eq!(c.context().calls(), vec![want(4), want(5), want(6)]);
        drop(c);
        assert_eq!(first_offsets(topic, group).get(&1), Some(&6), "where the last commit said");
        p.delete_topic(topic, Duration::from_secs(10)).expect("delete topic");
    }
    assert_no_handles();
}

/// A consumer context that keeps what its commit callback is told.
#[derive(Default)]
struct Commits(Mutex<Vec<CommitCall>>);

type CommitCall = (Result<(), KafkaError>, Vec<(String, i32, Offset)>);

impl Commits {
    fn calls(&self) -> Vec<CommitCall> {
        self.0.lock().unwrap().clone()
    }
}

impl ConsumerContext for Commits {
    fn commit_callback(&self, result: Result<(), KafkaError>, offsets: &TopicPartitionList) {
        let list = offsets.elements().iter().map(|e| (e.topic.clone(), e.partition, e.offset)).collect();
        self.0.lock().unwrap().push((result, list));
    }
}

/// A consumer context that keeps what its rebalances say the consumer owns.
struct Owned {
    topic: String,
    owned: Mutex<BTreeSet<i32>>,
}

impl Owned {
    fn new(topic: &str) -> Owned {
        Owned { topic: topic.to_string(), owned: Mutex::new(BTreeSet::new()) }
    }
    fn owned(&self) -> BTreeSet<i32> {
        self.owned.lock().unwrap().clone()
    }
}

impl ConsumerContext for Owned {
    fn post_rebalance(&self, rebalance: &Rebalance<'_>) {
        let mut owned = self.owned.lock().unwrap();
        match rebalance {
            Rebalance::Assign(l) => {
                for e in l.elements() {
                    assert_eq!(e.topic, self.topic);
                    assert!(owned.insert(e.partition), "assigned twice: {}", e.partition);
                }
            }
            Rebalance::Revoke(l) => {
                for e in l.elements() {
                    assert!(owned.remove(&e.partition), "revoked what was not assigned: {}", e.partition);
                }
            }
        }
    }
}

#[test]
fn group_of_two_consumers_shares_partitions() {
    let _g = serial();
    let topic = &unique("rust-group");
    let n = 80;
    {
        let p = producer();
        p.create_topic(topic, 4, -1, Duration::from_secs(10)).expect("create topic");
        let values: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
        let futures: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                p.send_result(FutureRecord::to(topic).key(&v[..]).payload(&v[..]).partition(i as i32 % 4)).unwrap()
            })
            .collect();
        for f in futures {
            block_on(f).expect("delivered");
        }
        let conf = ClientConfig::new()
            .set("bootstrap.servers", brokers())
            .set("group.id", topic.as_str())
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "500")
            .set("enable.auto.commit", "false")
            .clone();
        let a: BaseConsumer<Owned> = conf.create_with_context(Owned::new(topic)).expect("consumer a");
        let b: BaseConsumer<Owned> = conf.create_with_context(Owned::new(topic)).expect("consumer b");
        a.subscribe(&[topic]).expect("subscribe a");
        b.subscribe(&[topic]).expect("subscribe b");
        let mut seen = BTreeSet::new();
        let mut parts = [BTreeSet::new(), BTreeSet::new()];
        for _ in 0..3000 {
            for (i, c) in [&a, &b].into_iter().enumerate() {
                if let Some(m) = c.poll(Duration::from_millis(20)) {
                    let m = m.expect("poll");
                    // the assignment reached the context before any record of it
                    assert!(
                        c.context().owned().contains(&m.partition()),
                        "record of {} before its assignment",
                        m.partition()
                    );
                    seen.insert(m.payload().unwrap().to_vec());
                    parts[i].insert(m.partition());
                }
            }
            if seen.len() == n && !parts[0].is_empty() && !parts[1].is_empty() {
                break;
            }
        }
        assert_eq!(seen.len(), n, "records missing");
        assert!(!parts[0].is_empty() && !parts[1].is_empty(), "one consumer got nothing: {parts:?}");
        let (oa, ob) = (a.context().owned(), b.context().owned());
        assert!(!oa.is_empty() && !ob.is_empty() && oa.is_disjoint(&ob), "owned {oa:?} and {ob:?}");
        a.commit_consumer_state(CommitMode::Sync).expect("commit a");
        b.commit_consumer_state(CommitMode::Sync).expect("commit b");
        // b leaves: its partitions are revoked inside close, and a is given all four
        b.close().expect("close b");
        assert!(b.context().owned().is_empty(), "b still owns {:?}", b.context().owned());
        for _ in 0..1500 {
            if a.context().owned().len() == 4 {
                break;
            }
            a.poll(Duration::from_millis(20));
        }
        assert_eq!(a.context().owned(), BTreeSet::from([0, 1, 2, 3]));
        a.close().expect("close a");
        assert!(a.context().owned().is_empty());
        assert!(a.poll(Duration::from_millis(10)).is_none(), "poll after close");
    }
    assert_no_handles();
}

#[test]
fn errors_map_to_kafka_errors() {
    let _g = serial();
    {
        // Configuration: an unknown key, a bad value, keys that do not fit together.
        match ClientConfig::new().set("no.such.key", "1").create::<FutureProducer>() {
            Err(KafkaError::ClientConfig(e)) => {
                assert!(e.unknown && e.key == "no.such.key" && e.message.contains("no.such.key"), "{e:?}")
            }
            other => panic!("unknown key: {:?}", other.err()),
        }
        match ClientConfig::new().set("acks", "many").create::<BaseConsumer>() {
            Err(KafkaError::ClientConfig(e)) => assert!(!e.unknown && e.message.contains("acks"), "{e:?}"),
            other => panic!("bad value: {:?}", other.err()),
        }
        let bad = ClientConfig::new()
            .set("group.id", "g")
            .set("session.timeout.ms", "1000")
            .set("heartbeat.interval.ms", "5000")
            .create::<BaseConsumer>();
        assert!(
            matches!(bad, Err(KafkaError::ClientCreation(ref m)) if m.contains("HeartbeatInterval")),
            "{:?}",
            bad.err()
        );

        // State: subscribe without group.id.
        let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", brokers()).create().unwrap();
        assert_eq!(c.subscribe(&["t"]), Err(KafkaError::Subscription(ErrorCode::STATE)));
        assert_eq!(c.commit_consumer_state(CommitMode::Sync), Err(KafkaError::ConsumerCommit(ErrorCode::STATE)));

        // Protocol errors from the broker.
        let p = producer();
        let (t1, t2) = (&unique("rust-errors"), &unique("rust-errors-2"));
        p.create_topic(t1, 1, -1, Duration::from_secs(10)).unwrap();
        assert_eq!(
            p.create_topic(t1, 1, -1, Duration::from_secs(10)),
            Err(KafkaError::AdminOp(ErrorCode::TOPIC_ALREADY_EXISTS))
        );
        p.delete_topic(t1, Duration::from_secs(10)).unwrap();
        assert_eq!(
            p.delete_topic(t1, Duration::from_secs(10)),
            Err(KafkaError::AdminOp(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
        );
        // A record to a partition the topic does not have fails in its delivery report, which
        // hands the record back.
        p.create_topic(t2, 1, -1, Duration::from_secs(10)).unwrap();
        let r = block_on(p.send(FutureRecord::to(t2).key("k").payload("v").partition(7), Duration::ZERO));
        match r {
            Err((KafkaError::MessageProduction(code, text), msg)) => {
                // libspool refuses it locally (partition 7 of 1) with the code a broker would answer.
                assert_eq!(code, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "{text}");
                assert!(text.contains("partition 7 of 1"), "{text}");
                assert_eq!((msg.topic(), msg.key(), msg.payload()), (t2.as_str(), Some(&b"k"[..]), Some(&b"v"[..])));
            }
            other => panic!("record to partition 7: {other:?}"),
        }
        // Refused before it leaves: a topic with a NUL byte.
        let refused = p.send_result(FutureRecord::to("bad\0topic").payload("x").key("k"));
        assert!(matches!(refused, Err((KafkaError::MessageProduction(ErrorCode::BAD_ARG, _), _))));
        p.delete_topic(t2, Duration::from_secs(10)).unwrap();
    }
    assert_no_handles();
}

#[test]
fn broker_down_fails_every_record_with_transport() {
    let _g = serial();
    {
        // A port nobody listens on: bind one, then close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let p: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", format!("127.0.0.1:{port}"))
            .set("message.timeout.ms", "1500")
            .set("socket.connection.setup.timeout.ms", "500")
            .create()
            .unwrap();
        let futures: Vec<_> = (0..3)
            .map(|i| p.send_result(FutureRecord::to("down").key(&format!("k{i}")[..]).payload("v")).unwrap())
            .collect();
        for f in futures {
            match block_on(f) {
                Err((e, _)) => assert_eq!(e.code(), Some(ErrorCode::TRANSPORT), "{e}"),
                Ok(d) => panic!("delivered to a broker that is down: {d:?}"),
            }
        }
        assert_eq!(p.in_flight_count(), 0);
    }
    assert_no_handles();
}
