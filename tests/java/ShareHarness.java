import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a share group (KIP-932) with explicit acknowledgement: a record whose value is a
 * number ending in 0 is RELEASEd on its first delivery (it comes back with a higher delivery
 * count), one ending in 5 is REJECTed (never again), every other delivery ACCEPTed. Prints one
 * JSON line per delivery (partition, offset, value, delivery count, what it did) and one per
 * commitSync: the partitions whose acknowledgements failed, or the error it threw (a broker
 * killed mid-stream: the member goes on polling, as an application would). By default a member
 * commits after each poll; with "each" after each record (some of a poll's acknowledgements are
 * confirmed before a kill, the rest fail).
 * Arguments: bootstrap topic group name stopFile seconds [ms of work per record [each]].
 */
public class ShareHarness {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("client.id", args[3]);
        props.put("share.acknowledgement.mode", "explicit");
        Path stop = Path.of(args[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000;
        long work = args.length > 6 ? Long.parseLong(args[6]) : 0;
        boolean each = args.length > 7 && args[7].equals("each");
        try (KafkaShareConsumer<String, String> consumer =
                new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(args[1]));
            System.out.println("{\"event\":\"subscribed\"}");
            while (!Files.exists(stop) && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (KafkaException e) {
                    System.out.println("{\"event\":\"poll\",\"error\":" + quote(e) + "}");
                    System.out.flush();
                    Thread.sleep(100);
                    continue;
                }
                for (ConsumerRecord<String, String> r : records) {
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    String action = "accept";
                    if (r.value().endsWith("5")) action = "reject";
                    else if (r.value().endsWith("0") && count == 1) action = "release";
                    if (work > 0) Thread.sleep(work);
                    consumer.acknowledge(r, action.equals("accept") ? AcknowledgeType.ACCEPT
                            : action.equals("reject") ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE);
                    System.out.println("{\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                            + ",\"value\":\"" + r.value() + "\",\"delivery\":" + count
                            + ",\"action\":\"" + action + "\"}");
                    System.out.flush();
                    if (each) commit(consumer);
                }
                if (!records.isEmpty() && !each) commit(consumer);
                System.out.flush();
            }
        }
        System.out.println("{\"event\":\"closed\"}");
    }

    /** commitSync, printed: {"event":"commit","failed":{partition:error,...}} or its error. */
    static void commit(KafkaShareConsumer<String, String> consumer) {
        StringBuilder failed = new StringBuilder();
        try {
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : consumer.commitSync().entrySet()) {
                if (e.getValue().isEmpty()) continue;
                if (failed.length() > 0) failed.append(',');
                failed.append('"').append(e.getKey().partition()).append("\":").append(quote(e.getValue().get()));
            }
            System.out.println("{\"event\":\"commit\",\"failed\":{" + failed + "}}");
        } catch (KafkaException e) {
            System.out.println("{\"event\":\"commit\",\"error\":" + quote(e) + "}");
        }
    }

    static String quote(Exception e) {
        String text = e.getClass().getSimpleName() + ": " + e.getMessage();
        return "\"" + text.replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"";
    }
}
