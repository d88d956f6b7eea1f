import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Differential oracle: Kafka's own generated message classes re-serialise bytes produced by the
 * project's codec, so the tests can demand byte-identical output.
 *
 * One request per line on stdin, one answer per line on stdout:
 *
 *   KEY VERSION request|response HEX   read with the generated class, write again: "OK HEX"
 *                                      (KEY -1 is RequestHeader, -2 ResponseHeader, VERSION is
 *                                      then the header version)
 *   default KEY VERSION request|response
 *                                      a freshly constructed message written: "OK HEX"
 *   versions KEY                       "OK LOWEST HIGHEST" (highest including unstable versions;
 *                                      KEY -1 and -2: the header's versions)
 *   stable KEY                         "OK HIGHEST" without unstable versions
 *   headers KEY VERSION                "OK REQUEST_HEADER_VERSION RESPONSE_HEADER_VERSION"
 *   version                            "OK" and the kafka-clients version of the classpath
 *
 * Anything Java cannot do is answered "ERR <exception class>: <message>" on one line; bytes left
 * over after a read are answered "ERR trailing N".
 */
public final class CodecOracle {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private CodecOracle() {
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = "OK " + handle(line.trim());
            } catch (Throwable t) {
                answer = "ERR " + oneLine(t);
            }
            out.write(answer);
            out.write('\n');
            out.flush();
        }
    }

    private static String handle(String line) {
        String[] parts = line.split(" ", -1);
        switch (parts[0]) {
            case "version":
                return kafkaVersion();
            case "versions": {
                short key = Short.parseShort(parts[1]);
                if (key < 0) {
                    Message header = newMessage(key, "request");
                    return header.lowestSupportedVersion() + " " + header.highestSupportedVersion();
                }
                ApiMessageType type = ApiMessageType.fromApiKey(key);
                return type.lowestSupportedVersion() + " " + type.highestSupportedVersion(true);
            }
            case "stable":
                return Short.toString(ApiMessageType.fromApiKey(Short.parseShort(parts[1])).highestSupportedVersion(false));
            case "headers": {
                ApiMessageType type = ApiMessageType.fromApiKey(Short.parseShort(parts[1]));
                short version = Short.parseShort(parts[2]);
                return type.requestHeaderVersion(version) + " " + type.responseHeaderVersion(version);
            }
            case "default": {
                Message msg = newMessage(Short.parseShort(parts[1]), parts[3]);
                return hex(write(msg, Short.parseShort(parts[2])));
            }
            default:
                return reserialise(parts);
        }
    }

    private static String reserialise(String[] parts) {
        if (parts.length < 3 || parts.length > 4) {
            throw new IllegalArgumentException("expected KEY VERSION KIND HEX, got " + parts.length + " words");
        }
        short apiKey = Short.parseShort(parts[0]);
        short version = Short.parseShort(parts[1]);
        Message msg = newMessage(apiKey, parts[2]);
        ByteBuffer buf = ByteBuffer.wrap(unhex(parts.length == 4 ? parts[3] : ""));
        msg.read(new ByteBufferAccessor(buf), version);
        if (buf.hasRemaining()) {
            throw new TrailingBytes(buf.remaining());
        }
        return hex(write(msg, version));
    }

    private static Message newMessage(short apiKey, String kind) {
        if (apiKey == -1) {
            return new RequestHeaderData();
        }
        if (apiKey == -2) {
            return new ResponseHeaderData();
        }
        ApiMessageType type = ApiMessageType.fromApiKey(apiKey);
        switch (kind) {
            case "request":
                return type.newRequest();
            case "response":
                return type.newResponse();
            default:
                throw new IllegalArgumentException("kind must be request or response, not " + kind);
        }
    }

    private static byte[] write(Message msg, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = msg.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(size);
        msg.write(new ByteBufferAccessor(out), cache, version);
        if (out.hasRemaining()) {
            throw new IllegalStateException("size() said " + size + " but write() wrote " + out.position());
        }
        return out.array();
    }

    /** The kafka-clients release on the classpath, from the properties file its jar carries. */
    private static String kafkaVersion() {
        java.util.Properties props = new java.util.Properties();
        try (java.io.InputStream in = ApiMessageType.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            props.load(in);
        } catch (java.io.IOException | NullPointerException e) {
            return "unknown";
        }
        return props.getProperty("version", "unknown");
    }

    /** Not an error of Java's: the read succeeded but did not use the whole frame. */
    private static final class TrailingBytes extends RuntimeException {
        TrailingBytes(int n) {
            super("trailing " + n);
        }
    }

    private static String oneLine(Throwable t) {
        if (t instanceof TrailingBytes) {
            return t.getMessage();
        }
        String text = t.getClass().getName() + ": " + t.getMessage();
        return text.replace('\r', ' ').replace('\n', ' ');
    }

    private static String hex(byte[] bytes) {
        char[] chars = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            chars[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            chars[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(chars);
    }

    private static byte[] unhex(String text) {
        if (text.length() % 2 != 0) {
            throw new IllegalArgumentException("odd number of hex digits: " + text.length());
        }
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int hi = Character.digit(text.charAt(2 * i), 16);
            int lo = Character.digit(text.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("not a hex digit at offset " + 2 * i);
            }
            out[i] = (byte) ((hi << 4) | lo);
        }
        return out;
    }
}
