// A KIP-848 member for the project's tests: Kafka's Java consumer with group.protocol=consumer.
// Arguments: bootstrap topic group name stopFile maxSeconds [groupProtocol: consumer (default)
// or classic, for the online migration]. It subscribes to the topic, prints
// one JSON line per record it consumes ({"member","partition","offset","value"}) and commits
// synchronously after each poll's records; it stops (closing, so leaving the group) when
// stopFile exists or after maxSeconds, and prints {"member","closed":true}.
import java.io.File;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

public class Kip848Harness {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], name = args[3];
        File stop = new File(args[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000;
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, args.length > 6 ? args[6] : "consumer");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            while (!stop.exists() && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    System.out.println("{\"member\":\"" + name + "\",\"partition\":" + r.partition()
                        + ",\"offset\":" + r.offset() + ",\"value\":\"" + r.value() + "\"}");
                }
                System.out.flush();
                if (!records.isEmpty()) {
                    try {
                        consumer.commitSync();
                        System.out.println("{\"member\":\"" + name + "\",\"committed\":true}");
                    } catch (org.apache.kafka.common.KafkaException e) {
                        // a classic member's commit refused by a rebalance: said, not hidden
                        System.out.println("{\"member\":\"" + name + "\",\"commitFailed\":\""
                            + e.getClass().getSimpleName() + "\"}");
                    }
                    Thread.sleep(200);
                }
            }
        }
        System.out.println("{\"member\":\"" + name + "\",\"closed\":true}");
        System.out.flush();
    }
}
