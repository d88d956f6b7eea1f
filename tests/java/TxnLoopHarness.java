// A read-process-write worker with kafka-clients' transactional KafkaProducer and a
// read_committed KafkaConsumer, for tests/txn_loop.py (issue 28). It copies the input topic to
// the output topic partition by partition, each output value being the input value, "|" and the
// label of the transaction that wrote it; every k-th transaction is aborted on purpose and the
// consumer rewound to where it began. At transaction killAt, with the transaction's records and
// offsets sent, it prints a kill-point event and waits for a line on stdin (the test kills the
// coordinator's broker meanwhile), then starts a new producer with the same transactional id and
// a new consumer in the same group, and tries to commit with the old producer, which must be
// fenced. With killMode "ended" the kill point comes instead as soon as transaction killAt has
// ended (commitTransaction/abortTransaction returned) and the same producer goes on. Events are
// JSON lines on stdout; everything is bounded by the deadline argument.
//
// args: bootstrap input output group transactionalId expected batch abortEvery killAt seconds
//       killMode

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnLoopHarness {
    static String bootstrap, input, output, group, tid;
    static long deadline;
    static int instances = 0;
    static KafkaProducer<byte[], byte[]> producer;
    static KafkaConsumer<byte[], byte[]> consumer;
    static int batch;

    static void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quote(String s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"";
    }

    static void checkDeadline(String what) {
        if (System.nanoTime() > deadline) {
            throw new IllegalStateException("deadline passed " + what);
        }
    }

    static void newInstance() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 20000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 8000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producer = new KafkaProducer<>(p);
        while (true) {
            try {
                producer.initTransactions();
                break;
            } catch (TimeoutException e) { // the coordinator is moving: safe to call again
                checkDeadline("in initTransactions");
            }
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
        c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        c.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000);
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, batch);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        consumer = new KafkaConsumer<>(c);
        consumer.subscribe(List.of(input));
        instances++;
        emit("{\"event\":\"instance\",\"n\":" + instances + "}");
    }

    static void rewind(Map<TopicPartition, Long> first) {
        for (Map.Entry<TopicPartition, Long> e : first.entrySet()) {
            try {
                consumer.seek(e.getKey(), e.getValue());
            } catch (IllegalStateException notAssigned) { // the group's committed offset rules
            }
        }
    }

    static void commit() {
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (TimeoutException e) { // may be called again until it completes
                checkDeadline("in commitTransaction");
            }
        }
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        input = args[1];
        output = args[2];
        group = args[3];
        tid = args[4];
        long expected = Long.parseLong(args[5]);
        batch = Integer.parseInt(args[6]);
        int abortEvery = Integer.parseInt(args[7]);
        int killAt = Integer.parseInt(args[8]);
        boolean killOpen = args[10].equals("open");
        deadline = System.nanoTime() + Long.parseLong(args[9]) * 1_000_000_000L;
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        newInstance();
        char letter = 'a';
        long copied = 0;
        int txn = 0;
        while (copied < expected) {
            checkDeadline("after copying " + copied + " of " + expected);
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) {
                continue;
            }
            txn++;
            String label = "j" + letter + txn;
            Map<TopicPartition, Long> first = new HashMap<>();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            byte[] suffix = ("|" + label).getBytes(StandardCharsets.UTF_8);
            try {
                producer.beginTransaction();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    first.putIfAbsent(tp, r.offset());
                    offsets.put(tp, new OffsetAndMetadata(r.offset() + 1));
                    byte[] value = new byte[r.value().length + suffix.length];
                    System.arraycopy(r.value(), 0, value, 0, r.value().length);
                    System.arraycopy(suffix, 0, value, r.value().length, suffix.length);
                    producer.send(new ProducerRecord<>(output, r.partition(), null, value));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (txn == killAt && killOpen) {
                    producer.flush();
                    emit("{\"event\":\"kill-point\",\"label\":" + quote(label) + "}");
                    String go = stdin.readLine();
                    if (go == null) {
                        throw new IllegalStateException("stdin closed at the kill point");
                    }
                    KafkaProducer<byte[], byte[]> zombie = producer;
                    consumer.close(Duration.ofSeconds(5));
                    letter++;
                    newInstance();
                    String outcome;
                    try {
                        zombie.commitTransaction();
                        outcome = "COMMITTED";
                    } catch (KafkaException e) {
                        outcome = e.getClass().getSimpleName();
                    }
                    zombie.close(Duration.ofSeconds(5));
                    emit("{\"event\":\"zombie\",\"label\":" + quote(label) + ",\"outcome\":" + quote(outcome) + "}");
                    continue;
                }
                if (txn % abortEvery == 0) {
                    // sent first: abortTransaction drops batches still in the accumulator, and an
                    // abort whose records never reached the log would prove nothing
                    producer.flush();
                    producer.abortTransaction();
                    rewind(first);
                    emit("{\"event\":\"abort\",\"label\":" + quote(label) + "}");
                } else {
                    commit();
                    copied += records.count();
                    emit("{\"event\":\"commit\",\"label\":" + quote(label) + ",\"records\":" + records.count() + "}");
                }
                if (txn == killAt) { // killMode "ended": the markers may still be on their way
                    emit("{\"event\":\"kill-point\",\"label\":" + quote(label) + "}");
                    if (stdin.readLine() == null) {
                        throw new IllegalStateException("stdin closed at the kill point");
                    }
                }
            } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                    | UnsupportedVersionException fatal) {
                emit("{\"event\":\"failed\",\"label\":" + quote(label) + ",\"error\":" + quote(fatal.toString()) + "}");
                producer.close(Duration.ofSeconds(5));
                consumer.close(Duration.ofSeconds(5));
                letter++;
                newInstance();
            } catch (KafkaException abortable) {
                emit("{\"event\":\"failed\",\"label\":" + quote(label) + ",\"error\":" + quote(abortable.toString()) + "}");
                try {
                    producer.abortTransaction();
                    rewind(first);
                } catch (KafkaException e) { // cannot abort: a new instance aborts it by fencing
                    producer.close(Duration.ofSeconds(5));
                    consumer.close(Duration.ofSeconds(5));
                    letter++;
                    newInstance();
                }
            }
        }
        consumer.close(Duration.ofSeconds(5));
        producer.close(Duration.ofSeconds(5));
        emit("{\"event\":\"done\",\"copied\":" + copied + ",\"transactions\":" + txn + "}");
    }
}
