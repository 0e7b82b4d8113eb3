package dev.syncmeshedge.testserver;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import de.bwaldvogel.mongo.bson.Document;

/**
 * The {@code updateDescription} of an update event, computed from the document before and after
 * the update the way MongoDB (5.0 and later) derives it from its oplog diff:
 *
 * <ul>
 *   <li>{@code updatedFields}: every field whose value changed or that is new, with its new value,
 *       by dotted path. A changed embedded document is described field by field
 *       ({@code "a.b": 1}), a changed array element by index ({@code "tags.2": "x"}: what
 *       {@code $push} and {@code $set: {"tags.2": ...}} give). A value whose type changed is
 *       replaced whole.</li>
 *   <li>{@code removedFields}: the dotted paths of removed fields ({@code $unset}).</li>
 *   <li>{@code truncatedArrays}: {@code {field, newSize}} for arrays that got shorter
 *       ({@code $pop}, {@code $pull}); their remaining changed elements are in updatedFields.</li>
 * </ul>
 *
 * Values compare as BSON does: with their types ({@code 1} and {@code 1.0} differ) and field
 * order. MongoDB sometimes logs a whole embedded document or array instead of its changed parts
 * when that is smaller; readers must apply either form, and this one always gives the parts.
 */
final class UpdateDescription {

    private UpdateDescription() {
    }

    static Document between(Document before, Document after) {
        Document updated = new Document();
        List<String> removed = new ArrayList<>();
        List<Document> truncated = new ArrayList<>();
        diffDocuments(before, after, "", updated, removed, truncated);
        return new Document("updatedFields", updated)
                .append("removedFields", removed)
                .append("truncatedArrays", truncated);
    }

    private static void diffDocuments(Document before, Document after, String prefix, Document updated, List<String> removed, List<Document> truncated) {
        for (String key : before.keySet()) {
            if (!after.containsKey(key)) {
                removed.add(prefix + key);
            }
        }
        for (String key : after.keySet()) {
            Object newValue = after.get(key);
            if (!before.containsKey(key)) {
                updated.put(prefix + key, newValue);
            } else {
                diffValues(before.get(key), newValue, prefix + key, updated, removed, truncated);
            }
        }
    }

    private static void diffValues(Object oldValue, Object newValue, String path, Document updated, List<String> removed, List<Document> truncated) {
        if (sameBson(oldValue, newValue)) {
            return;
        }
        if (oldValue instanceof Document oldDoc && newValue instanceof Document newDoc && sameKeyOrder(oldDoc, newDoc)) {
            diffDocuments(oldDoc, newDoc, path + ".", updated, removed, truncated);
        } else if (oldValue instanceof List<?> oldList && newValue instanceof List<?> newList) {
            if (newList.size() < oldList.size()) {
                truncated.add(new Document("field", path).append("newSize", newList.size()));
            }
            for (int i = 0; i < newList.size(); i++) {
                if (i >= oldList.size()) {
                    updated.put(path + "." + i, newList.get(i));
                } else {
                    diffValues(oldList.get(i), newList.get(i), path + "." + i, updated, removed, truncated);
                }
            }
        } else {
            updated.put(path, newValue);
        }
    }

    /**
     * An embedded document is described field by field only when the fields it kept are still in
     * their order (a dotted path cannot say "moved"); otherwise it is replaced whole.
     */
    private static boolean sameKeyOrder(Document oldDoc, Document newDoc) {
        List<String> kept = new ArrayList<>(oldDoc.keySet());
        kept.retainAll(newDoc.keySet());
        List<String> order = new ArrayList<>(newDoc.keySet());
        order.retainAll(oldDoc.keySet());
        return kept.equals(order);
    }

    /** Equal as BSON values: same type and value, documents with the same field order. */
    private static boolean sameBson(Object a, Object b) {
        if (a == null || b == null) {
            return a == b;
        }
        if (a.getClass() != b.getClass() && !(a instanceof List && b instanceof List)) {
            return false;
        }
        if (a instanceof List<?> la && b instanceof List<?> lb) {
            if (la.size() != lb.size()) {
                return false;
            }
            for (int i = 0; i < la.size(); i++) {
                if (!sameBson(la.get(i), lb.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Document da && b instanceof Document db) {
            if (!new ArrayList<>(da.keySet()).equals(new ArrayList<>(db.keySet()))) {
                return false;
            }
            for (String key : da.keySet()) {
                if (!sameBson(da.get(key), db.get(key))) {
                    return false;
                }
            }
            return true;
        }
        return Objects.equals(a, b);
    }
}
