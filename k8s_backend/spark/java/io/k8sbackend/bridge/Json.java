package io.k8sbackend.bridge;

import java.util.Iterator;
import java.util.Map;

/**
 * A minimal JSON writer. Composite arguments cross to Python as one JSON string: one Py4J round trip
 * instead of one per element, and no JVM object proxies left for Python to walk.
 */
final class Json {
    private Json() {
    }

    static String quote(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(value.length() + 2).append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    /** An object whose values are already JSON text. */
    static String object(Map<String, String> members) {
        StringBuilder out = new StringBuilder("{");
        Iterator<Map.Entry<String, String>> it = members.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<String, String> e = it.next();
            out.append(quote(e.getKey())).append(':').append(e.getValue());
            if (it.hasNext()) {
                out.append(',');
            }
        }
        return out.append('}').toString();
    }

    /** An array whose items are already JSON text. */
    static String array(Iterable<String> items) {
        StringBuilder out = new StringBuilder("[");
        Iterator<String> it = items.iterator();
        while (it.hasNext()) {
            out.append(it.next());
            if (it.hasNext()) {
                out.append(',');
            }
        }
        return out.append(']').toString();
    }
}
