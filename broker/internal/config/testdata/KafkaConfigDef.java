// Prints every property of Apache Kafka's broker configuration (KafkaConfig.configDef()), one
// per line: name, type, default ("<none>" when it has none), tab-separated; then every topic
// config (LogConfig.configNames()) as "topic", name, type. Run with Kafka's jars on the class
// path by TestEveryKafkaBrokerPropertyIsKnown.
import org.apache.kafka.common.config.ConfigDef;

public class KafkaConfigDef {
    public static void main(String[] args) {
        for (ConfigDef.ConfigKey k : kafka.server.KafkaConfig.configDef().configKeys().values()) {
            Object def = k.hasDefault() ? k.defaultValue : "<none>";
            if (def instanceof Class<?> c) {
                def = c.getName();
            } else if (def instanceof java.util.List<?> l) {
                def = String.join(",", l.stream().map(String::valueOf).toList());
            }
            System.out.println(k.name + "\t" + k.type + "\t" + def);
        }
        for (String name : org.apache.kafka.storage.internals.log.LogConfig.configNames()) {
            Object type = org.apache.kafka.storage.internals.log.LogConfig.configType(name).map(Object::toString).orElse("?");
            System.out.println("topic\t" + name + "\t" + type);
        }
    }
}
