// kafka-conformance: the KIP-42 harness for a Java kafka-clients release.
//
// It runs the KIP-42 scenarios through a real KafkaProducer and KafkaConsumer whose interceptor
// chains are recording probes, and writes every callback (which interceptor, which call, its
// arguments, the thread, a global sequence number) and every step of its own (send, callback,
// poll, commit, close) as one JSON object per line. It judges nothing: the suite reads the lines
// (conformance/suite/kip42/java_events.py). Compiled against each release with javac; it uses
// reflection only for what a release may lack (the record checksum, removed in 3.0).
//
// Usage: Kip42Harness BOOTSTRAP TOPIC GROUP OUT_FILE [FAULT]
// FAULT (the project's tests only): "reorder" (one chain interceptor calls the probes in reverse
// order) or "drop-failed-acks" (it skips onAcknowledgement when the send failed).

import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Kip42Harness {
    /** What each probe does, by index: tag (changes key/value, adds a header), raise, tag. */
    static final String[] BEHAVIOURS = {"tag", "raise", "tag"};
    /** Records sent that must be acknowledged. */
    static final int RECORDS = 6;
    /** A value the failing serializer refuses (send() throws). */
    static final String UNSERIALISABLE = "unserialisable";
    static final String FAULT_KEY = "kc.fault";

    static PrintWriter out;
    static final AtomicLong SEQ = new AtomicLong();
    static final long START = System.currentTimeMillis();

    // --- JSON lines --------------------------------------------------------------------------

    static synchronized void emit(String who, String call, Map<String, Object> args) {
        Map<String, Object> e = new java.util.LinkedHashMap<>();
        e.put("seq", SEQ.incrementAndGet());
        e.put("who", who);
        e.put("call", call);
        e.put("thread", Thread.currentThread().getName());
        e.put("ms", System.currentTimeMillis() - START);
        e.put("args", args);
        out.println(json(e));
        out.flush();
    }

    static Map<String, Object> args(Object... kv) {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : ((String) o).toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            return b.append('"').toString();
        }
        if (o instanceof Number || o instanceof Boolean) return o.toString();
        if (o instanceof Map) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> en : ((Map<?, ?>) o).entrySet()) {
                if (b.length() > 1) b.append(',');
                b.append(json(String.valueOf(en.getKey()))).append(':').append(json(en.getValue()));
            }
            return b.append('}').toString();
        }
        if (o instanceof Iterable) {
            StringBuilder b = new StringBuilder("[");
            for (Object x : (Iterable<?>) o) {
                if (b.length() > 1) b.append(',');
                b.append(json(x));
            }
            return b.append(']').toString();
        }
        return json(o.toString());
    }

    static Object error(Throwable e) {
        return e == null ? null : args("type", e.getClass().getName(), "message", String.valueOf(e.getMessage()));
    }

    static List<Object> headers(Iterable<Header> hs) {
        List<Object> l = new ArrayList<>();
        if (hs != null)
            for (Header h : hs)
                l.add(Arrays.asList(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8)));
        return l;
    }

    /** The record checksum where the release has one (checksum() was removed in 3.0). */
    static Object checksum(Object record) {
        try {
            Method m = record.getClass().getMethod("checksum");
            return m.invoke(record);
        } catch (NoSuchMethodException e) {
            return "absent";
        } catch (Exception e) {
            return "error: " + e;
        }
    }

    static Object sent(ProducerRecord<String, String> r) {
        if (r == null) return null;
        return args("topic", r.topic(), "partition", r.partition(), "key", r.key(), "value", r.value(),
                "headers", headers(r.headers()));
    }

    static Object metadata(RecordMetadata m) {
        if (m == null) return null;
        return args("topic", m.topic(), "partition", m.partition(), "offset", m.hasOffset() ? m.offset() : -1,
                "key_size", m.serializedKeySize(), "value_size", m.serializedValueSize(), "checksum", checksum(m));
    }

    static Object consumed(ConsumerRecords<String, String> rs) {
        if (rs == null) return null;
        List<Object> l = new ArrayList<>();
        for (ConsumerRecord<String, String> r : rs)
            l.add(args("topic", r.topic(), "partition", r.partition(), "offset", r.offset(), "key", r.key(),
                    "value", r.value(), "headers", headers(r.headers()), "key_size", r.serializedKeySize(),
                    "value_size", r.serializedValueSize(), "checksum", checksum(r)));
        return l;
    }

    static Object offsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets == null) return null;
        List<Object> l = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet())
            l.add(args("topic", e.getKey().topic(), "partition", e.getKey().partition(),
                    "offset", e.getValue() == null ? null : e.getValue().offset()));
        return l;
    }

    // --- probes ------------------------------------------------------------------------------

    static String behaviour(int index) {
        return BEHAVIOURS[index];
    }

    /** A producer probe: records each call, then behaves as BEHAVIOURS says for its index. */
    public abstract static class ProducerProbe implements ProducerInterceptor<String, String> {
        abstract int index();

        String who() {
            return "producer-interceptor-" + index();
        }

        @Override
        public void configure(Map<String, ?> configs) {
            emit(who(), "configure", args("client.id", configs.get("client.id") == null ? null : String.valueOf(configs.get("client.id"))));
        }

        @Override
        public ProducerRecord<String, String> onSend(ProducerRecord<String, String> record) {
            ProducerRecord<String, String> result = record;
            if (behaviour(index()).equals("tag")) {
                RecordHeaders hs = new RecordHeaders(record.headers().toArray());
                hs.add("p" + index(), String.valueOf(index()).getBytes(StandardCharsets.UTF_8));
                result = new ProducerRecord<>(record.topic(), record.partition(), record.timestamp(),
                        record.key() + ".p" + index(), record.value() + "|p" + index(), hs);
            }
            emit(who(), "onSend", args("record", sent(record),
                    "returned", behaviour(index()).equals("raise") ? null : sent(result)));
            if (behaviour(index()).equals("raise")) throw new IllegalStateException("probe " + index() + " onSend");
            return result;
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            emit(who(), "onAcknowledgement", args("metadata", metadata(metadata), "exception", error(exception)));
            if (behaviour(index()).equals("raise")) throw new IllegalStateException("probe " + index() + " onAcknowledgement");
        }

        @Override
        public void close() {
            emit(who(), "close", args());
            if (behaviour(index()).equals("raise")) throw new IllegalStateException("probe " + index() + " close");
        }
    }

    public static final class P0 extends ProducerProbe { int index() { return 0; } }
    public static final class P1 extends ProducerProbe { int index() { return 1; } }
    public static final class P2 extends ProducerProbe { int index() { return 2; } }

    /** A consumer probe: records each call, then behaves as BEHAVIOURS says for its index. */
    public abstract static class ConsumerProbe implements ConsumerInterceptor<String, String> {
        abstract int index();

        String who() {
            return "consumer-interceptor-" + index();
        }

        @Override
        public void configure(Map<String, ?> configs) {
            emit(who(), "configure", args());
        }

        @Override
        public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
            ConsumerRecords<String, String> result = records;
            if (behaviour(index()).equals("tag")) {
                Map<TopicPartition, List<ConsumerRecord<String, String>>> m = new HashMap<>();
                for (TopicPartition tp : records.partitions()) {
                    List<ConsumerRecord<String, String>> l = new ArrayList<>();
                    for (ConsumerRecord<String, String> r : records.records(tp))
                        l.add(new ConsumerRecord<>(r.topic(), r.partition(), r.offset(), r.key(),
                                r.value() + "|c" + index()));
                    m.put(tp, l);
                }
                result = new ConsumerRecords<>(m);
            }
            emit(who(), "onConsume", args("records", consumed(records),
                    "returned", behaviour(index()).equals("raise") ? null : consumed(result)));
            if (behaviour(index()).equals("raise")) throw new IllegalStateException("probe " + index() + " onConsume");
            return result;
        }

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            emit(who(), "onCommit", args("offsets", offsets(offsets)));
            if (behaviour(index()).equals("raise")) throw new IllegalStateException("probe " + index() + " onCommit");
        }

        @Override
        public void close() {
            emit(who(), "close", args());
            if (behaviour(index()).equals("raise")) throw new IllegalStateException("probe " + index() + " close");
        }
    }

    public static final class C0 extends ConsumerProbe { int index() { return 0; } }
    public static final class C1 extends ConsumerProbe { int index() { return 1; } }
    public static final class C2 extends ConsumerProbe { int index() { return 2; } }

    // --- the faulty chains (the project's tests only) -------------------------------------------

    /** One interceptor standing for a wrong chain of the three probes. */
    public static final class FaultyProducerChain implements ProducerInterceptor<String, String> {
        final List<ProducerProbe> probes = Arrays.asList(new P0(), new P1(), new P2());
        String fault = "";

        @Override
        public void configure(Map<String, ?> configs) {
            fault = String.valueOf(configs.get(FAULT_KEY));
            for (ProducerProbe p : probes) p.configure(configs);
        }

        List<ProducerProbe> order() {
            List<ProducerProbe> l = new ArrayList<>(probes);
            if (fault.equals("reorder")) java.util.Collections.reverse(l);
            return l;
        }

        @Override
        public ProducerRecord<String, String> onSend(ProducerRecord<String, String> record) {
            for (ProducerProbe p : order()) {
                try {
                    record = p.onSend(record);
                } catch (RuntimeException e) {
                    // swallowed, as a client must
                }
            }
            return record;
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            if (exception != null && fault.equals("drop-failed-acks")) return;
            for (ProducerProbe p : order()) {
                try {
                    p.onAcknowledgement(metadata, exception);
                } catch (RuntimeException e) {
                    // swallowed
                }
            }
        }

        @Override
        public void close() {
            for (ProducerProbe p : order()) {
                try {
                    p.close();
                } catch (RuntimeException e) {
                    // swallowed
                }
            }
        }
    }

    /** One interceptor standing for a wrong consumer chain (reverse order under "reorder"). */
    public static final class FaultyConsumerChain implements ConsumerInterceptor<String, String> {
        final List<ConsumerProbe> probes = Arrays.asList(new C0(), new C1(), new C2());
        String fault = "";

        @Override
        public void configure(Map<String, ?> configs) {
            fault = String.valueOf(configs.get(FAULT_KEY));
            for (ConsumerProbe p : probes) p.configure(configs);
        }

        List<ConsumerProbe> order() {
            List<ConsumerProbe> l = new ArrayList<>(probes);
            if (fault.equals("reorder")) java.util.Collections.reverse(l);
            return l;
        }

        @Override
        public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
            for (ConsumerProbe p : order()) {
                try {
                    records = p.onConsume(records);
                } catch (RuntimeException e) {
                    // swallowed
                }
            }
            return records;
        }

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            for (ConsumerProbe p : order()) {
                try {
                    p.onCommit(offsets);
                } catch (RuntimeException e) {
                    // swallowed
                }
            }
        }

        @Override
        public void close() {
            for (ConsumerProbe p : order()) {
                try {
                    p.close();
                } catch (RuntimeException e) {
                    // swallowed
                }
            }
        }
    }

    /** A value serializer that refuses one value, so that send() itself fails. */
    public static final class RefusingSerializer implements Serializer<String> {
        final StringSerializer inner = new StringSerializer();

        @Override
        public byte[] serialize(String topic, String data) {
            if (data != null && data.startsWith(UNSERIALISABLE))
                throw new SerializationException("refused by the harness: " + data);
            return inner.serialize(topic, data);
        }
    }

    // --- scenarios ---------------------------------------------------------------------------

    static void produce(String bootstrap, String topic, String fault) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kc-kip42-producer");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", RefusingSerializer.class.getName());
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("max.block.ms", "2000");
        p.put("delivery.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        p.put("interceptor.classes", fault.isEmpty()
                ? P0.class.getName() + "," + P1.class.getName() + "," + P2.class.getName()
                : FaultyProducerChain.class.getName());
        p.put(FAULT_KEY, fault);
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        int partitions = -1;
        // a topic just created may reach the broker answering metadata a little later
        for (int attempt = 1; partitions < 0; attempt++) {
            try {
                partitions = producer.partitionsFor(topic).size();
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                if (attempt == 10) throw e;
            }
        }
        emit("harness", "partitions", args("topic", topic, "count", partitions));
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < RECORDS + 2; i++) {
            String id = "s" + i;
            ProducerRecord<String, String> r;
            if (i == RECORDS) // a partition the topic does not have: the send fails before queuing
                r = new ProducerRecord<>(topic, partitions + 7, "k" + i, "v" + i);
            else if (i == RECORDS + 1) // a value the serializer refuses: send() throws
                r = new ProducerRecord<>(topic, "k" + i, UNSERIALISABLE + i);
            else
                r = new ProducerRecord<>(topic, "k" + i, "v" + i);
            emit("harness", "send.begin", args("id", id, "record", sent(r)));
            try {
                producer.send(r, (metadata, exception) ->
                        emit("harness", "callback", args("id", id, "metadata", metadata(metadata), "exception", error(exception))));
                emit("harness", "send.end", args("id", id));
            } catch (Exception e) {
                emit("harness", "send.threw", args("id", id, "exception", error(e)));
            }
        }
        producer.flush();
        emit("harness", "flushed", args());
        emit("harness", "close.begin", args("client", "producer"));
        producer.close(Duration.ofSeconds(10));
        emit("harness", "close.end", args("client", "producer"));
    }

    static void consume(String bootstrap, String topic, String group, String fault) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kc-kip42-consumer");
        p.put("group.id", group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("interceptor.classes", fault.isEmpty()
                ? C0.class.getName() + "," + C1.class.getName() + "," + C2.class.getName()
                : FaultyConsumerChain.class.getName());
        p.put(FAULT_KEY, fault);
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo pi : consumer.partitionsFor(topic)) tps.add(new TopicPartition(topic, pi.partition()));
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        int got = 0;
        long deadline = System.currentTimeMillis() + 30_000;
        for (int round = 0; round < 300 && got < RECORDS && System.currentTimeMillis() < deadline; round++) {
            emit("harness", "poll.begin", args());
            ConsumerRecords<String, String> rs = consumer.poll(Duration.ofMillis(200));
            emit("harness", "poll.end", args("records", consumed(rs)));
            for (ConsumerRecord<String, String> r : rs) {
                got++;
                next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
        }
        emit("harness", "commit.begin", args("kind", "sync", "offsets", offsets(next)));
        try {
            consumer.commitSync(next);
            emit("harness", "commit.end", args("kind", "sync"));
        } catch (Exception e) {
            emit("harness", "commit.threw", args("kind", "sync", "exception", error(e)));
        }
        // an asynchronous commit of the same positions: onCommit before the user's callback
        CountDownLatch done = new CountDownLatch(1);
        emit("harness", "commit.begin", args("kind", "async", "offsets", offsets(next)));
        consumer.commitAsync(next, (offsets, exception) -> {
            emit("harness", "commit.callback", args("offsets", offsets(offsets), "exception", error(exception)));
            done.countDown();
        });
        for (int i = 0; i < 100 && !done.await(1, TimeUnit.MILLISECONDS); i++) consumer.poll(Duration.ofMillis(100));
        emit("harness", "commit.end", args("kind", "async"));
        Map<TopicPartition, OffsetAndMetadata> stored = consumer.committed(new HashSet<>(tps));
        emit("harness", "committed", args("offsets", offsets(stored)));
        emit("harness", "close.begin", args("client", "consumer"));
        consumer.close(Duration.ofSeconds(10));
        emit("harness", "close.end", args("client", "consumer"));
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 4) {
            System.err.println("usage: Kip42Harness BOOTSTRAP TOPIC GROUP OUT_FILE [FAULT]");
            System.exit(2);
        }
        String fault = argv.length > 4 ? argv[4] : "";
        out = new PrintWriter(new OutputStreamWriter(new FileOutputStream(argv[3]), StandardCharsets.UTF_8));
        emit("harness", "start", args("fault", fault));
        int code = 0;
        try {
            produce(argv[0], argv[1], fault);
            consume(argv[0], argv[1], argv[2], fault);
        } catch (Throwable e) {
            emit("harness", "aborted", args("exception", error(e)));
            e.printStackTrace();
            code = 1;
        }
        emit("harness", "end", args());
        out.close();
        System.exit(code);
    }
}
