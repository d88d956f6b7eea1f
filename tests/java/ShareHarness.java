import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a share group (KIP-932) with explicit acknowledgement: a record whose value is a
 * number ending in 0 is RELEASEd on its first delivery (it comes back with a higher delivery
 * count), one ending in 5 is REJECTed (never again), every other delivery ACCEPTed. Prints one
 * JSON line per delivery: partition, offset, value, delivery count, what it did.
 * Arguments: bootstrap topic group name stopFile seconds.
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
        try (KafkaShareConsumer<String, String> consumer =
                new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(args[1]));
            System.out.println("{\"event\":\"subscribed\"}");
            while (!Files.exists(stop) && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    String action = "accept";
                    if (r.value().endsWith("5")) action = "reject";
                    else if (r.value().endsWith("0") && count == 1) action = "release";
                    consumer.acknowledge(r, action.equals("accept") ? AcknowledgeType.ACCEPT
                            : action.equals("reject") ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE);
                    System.out.println("{\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                            + ",\"value\":\"" + r.value() + "\",\"delivery\":" + count
                            + ",\"action\":\"" + action + "\"}");
                }
                if (!records.isEmpty()) consumer.commitSync();
                System.out.flush();
            }
        }
        System.out.println("{\"event\":\"closed\"}");
    }
}
