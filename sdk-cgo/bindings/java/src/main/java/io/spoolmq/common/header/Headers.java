package io.spoolmq.common.header;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/** A record's headers, in order, as the Java client's {@code Headers}. */
public final class Headers implements Iterable<Header> {
    private final List<Header> headers = new ArrayList<>();

    public Headers add(String key, byte[] value) {
        headers.add(new Header(key, value));
        return this;
    }

    public Headers add(Header header) {
        headers.add(header);
        return this;
    }

    /** The last header with this key, or null. */
    public Header lastHeader(String key) {
        for (int i = headers.size() - 1; i >= 0; i--) {
            if (headers.get(i).key().equals(key)) {
                return headers.get(i);
            }
        }
        return null;
    }

    public Header[] toArray() {
        return headers.toArray(new Header[0]);
    }

    public int size() {
        return headers.size();
    }

    @Override
    public Iterator<Header> iterator() {
        return headers.iterator();
    }
}
