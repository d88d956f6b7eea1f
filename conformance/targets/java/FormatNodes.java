import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;

/**
 * Formats several KRaft nodes' storage in one JVM: Kafka's own kafka.tools.StorageTool, run once
 * per argument group ("--next" between groups), its exits turned into exceptions through Kafka's
 * Exit hook (org.apache.kafka.common.utils.Exit; utils.internals.Exit from 4.4). Prints
 * "FORMAT-EXIT index code" after each group and exits with the first failing code. Reflection
 * only, so one build serves every release.
 */
public final class FormatNodes {
    private static final class Exited extends RuntimeException {
        final int code;

        Exited(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    private static Class<?> exitClass() throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.utils.internals.Exit");
        } catch (ClassNotFoundException e) {
            return Class.forName("org.apache.kafka.common.utils.Exit");
        }
    }

    public static void main(String[] args) throws Exception {
        Class<?> exit = exitClass();
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object thrower = Proxy.newProxyInstance(
            procedure.getClassLoader(),
            new Class<?>[] {procedure},
            (proxy, method, margs) -> {
                if (method.getDeclaringClass() == Object.class) {
                    return method.getName().equals("hashCode") ? 0 : null;
                }
                throw new Exited((Integer) margs[0]);
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
        Method tool = Class.forName("kafka.tools.StorageTool").getMethod("main", String[].class);
        List<List<String>> groups = new ArrayList<>();
        groups.add(new ArrayList<>());
        for (String a : args) {
            if (a.equals("--next")) {
                groups.add(new ArrayList<>());
            } else {
                groups.get(groups.size() - 1).add(a);
            }
        }
        int first = 0;
        for (int i = 0; i < groups.size(); i++) {
            int code = 0;
            try {
                tool.invoke(null, (Object) groups.get(i).toArray(new String[0]));
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof Exited) {
                    code = ((Exited) e.getCause()).code;
                } else {
                    e.getCause().printStackTrace(System.out);
                    code = 1;
                }
            }
            System.out.println("FORMAT-EXIT " + i + " " + code);
            System.out.flush();
            if (code != 0 && first == 0) {
                first = code;
            }
        }
        System.exit(first);
    }
}
