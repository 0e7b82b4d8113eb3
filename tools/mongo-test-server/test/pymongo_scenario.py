"""Every kind of write pymongo can make, the reads a node needs, and a change stream that sees them.

Run by test/drivers.test.ts with the newest pymongo (src/pymongo.ts installs it into a venv):

    python pymongo_scenario.py MONGODB_URI DATABASE COLLECTION

It prints one JSON document (relaxed Extended JSON) with the change events, the reads and what
resuming a stream returned; the test compares them with what MongoDB produces, the same
expectations as for the Node driver's run of the same scenario.

    python pymongo_scenario.py readings MONGODB_URI DATABASE COLLECTION SENSOR_ID START_ISO

makes every kind of write on sensor readings of one sensor (timestamps from START, a minute
apart) in a collection that holds other readings (a node's sensor_data): the twin of
src/reading-writes.ts (the Node driver), which documents the writes and what they leave. It
prints {driver, writes, count, last_write_ms}.
"""

import sys
import time
from datetime import datetime, timedelta

import pymongo
from bson import json_util
from pymongo import DeleteMany, DeleteOne, InsertOne, MongoClient, ReplaceOne, UpdateMany, UpdateOne, WriteConcern


def main() -> None:
    uri, db_name, coll_name = sys.argv[1:4]
    client = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    coll = client[db_name][coll_name]
    coll.drop()
    stream = coll.watch(full_document="updateLookup")
    stream.try_next()  # the stream is open before the first write

    coll.insert_one({"_id": "a", "n": 1, "tags": ["x"], "sub": {"p": 1}})
    generated = coll.insert_one({"n": 0}).inserted_id
    coll.insert_many([{"_id": "b", "n": 2}, {"_id": "c", "n": 3}])
    coll.update_one({"_id": "a"}, {"$set": {"n": 10, "sub.q": 2}, "$inc": {"k": 1}, "$push": {"tags": "y"}})
    coll.update_one({"_id": "a"}, {"$unset": {"sub": ""}, "$pop": {"tags": 1}})
    coll.update_many({"_id": {"$in": ["b", "c"]}}, {"$set": {"m": True}})
    coll.replace_one({"_id": "b"}, {"r": 1})
    coll.update_one({"_id": "u"}, {"$set": {"v": 1}}, upsert=True)
    coll.replace_one({"_id": "v"}, {"w": 1}, upsert=True)
    coll.find_one_and_update({"_id": "c"}, {"$inc": {"n": 5}})
    coll.bulk_write(
        [
            InsertOne({"_id": "d", "n": 4}),
            UpdateOne({"_id": "d"}, {"$set": {"n": 5}}),
            ReplaceOne({"_id": "d"}, {"n": 6}),
            DeleteOne({"_id": "d"}),
        ]
    )
    coll.delete_one({"_id": "c"})
    coll.delete_many({"_id": {"$in": ["u", "v"]}})
    coll.with_options(write_concern=WriteConcern(w=0)).insert_one({"_id": "w0"})  # unacknowledged

    deadline = time.monotonic() + 30
    while coll.count_documents({"_id": "w0"}) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)

    events = []
    while len(events) < 20 and time.monotonic() < deadline:
        event = stream.try_next()
        if event is not None:
            events.append(event)
    stream.close()

    reads = {
        "find": list(coll.find({}, {"n": 1}).sort("_id", 1).limit(2)),
        "count": coll.count_documents({}),
        "countN": coll.count_documents({"n": {"$gte": 0}}),
        "distinct": sorted(coll.distinct("n")),
        "group": list(
            coll.aggregate(
                [
                    {"$match": {"n": {"$exists": True}}},
                    {"$group": {"_id": None, "total": {"$sum": "$n"}, "count": {"$sum": 1}}},
                    {"$project": {"_id": 0, "total": 1, "count": 1}},
                ]
            )
        ),
        "sorted": [d["_id"] for d in coll.aggregate([{"$match": {}}, {"$sort": {"_id": -1}}, {"$project": {"_id": 1}}])],
        "index": coll.create_index([("n", pymongo.ASCENDING)]),
    }

    resumed = {}
    if len(events) > 11:
        with coll.watch(start_after=events[3]["_id"], full_document="updateLookup") as after:
            resumed["startAfter3"] = next_event(after, deadline)
        with coll.watch(resume_after=events[10]["_id"]) as after:
            resumed["resumeAfter10"] = next_event(after, deadline)

    print(
        json_util.dumps(
            {"driver": f"pymongo {pymongo.version}", "generated": generated, "events": events, "reads": reads, "resumed": resumed},
            json_options=json_util.RELAXED_JSON_OPTIONS,
        )
    )
    client.close()


def next_event(stream, deadline):
    while time.monotonic() < deadline:
        event = stream.try_next()
        if event is not None:
            return event
    return None


def reading(sensor, start, i, **changes):
    doc = {
        "sensor_id": sensor,
        "location": sensor,
        "lat": 42.7,
        "lon": 23.3,
        "timestamp": start + timedelta(minutes=i),
        "temperature": 20 + (i % 10) * 0.5,
        "humidity": 50.0 + i % 7,
        "pressure": 94000.0 + i,
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not None}


def readings(uri, db_name, coll_name, sensor_arg, start_arg) -> None:
    """The writes of src/reading-writes.ts (keep the two in step), with pymongo."""
    sensor = int(sensor_arg)
    start = datetime.fromisoformat(start_arg.replace("Z", "+00:00")).replace(tzinfo=None)
    client = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    coll = client[db_name][coll_name]

    def at(i):
        return {"sensor_id": sensor, "timestamp": start + timedelta(minutes=i)}

    def between(a, b):
        return {"sensor_id": sensor, "timestamp": {"$gte": start + timedelta(minutes=a), "$lte": start + timedelta(minutes=b)}}

    ids = [coll.insert_one(reading(sensor, start, 0)).inserted_id]
    ids += coll.insert_many([reading(sensor, start, i) for i in range(1, 41)]).inserted_ids
    coll.update_one({"_id": ids[0]}, {"$set": {"temperature": 31.5}, "$inc": {"pressure": 12.5}})
    coll.update_one({"_id": ids[1]}, {"$unset": {"humidity": ""}})
    coll.update_many(between(2, 9), {"$inc": {"temperature": 1}, "$set": {"checked": True}})
    coll.replace_one({"_id": ids[10]}, reading(sensor, start, 10, temperature=5.5, humidity=None, note="replaced"))
    coll.update_one(at(100), {"$set": {"location": sensor, "temperature": 12.0, "humidity": 61.0}}, upsert=True)
    coll.update_one(at(100), {"$inc": {"temperature": 0.25}}, upsert=True)
    coll.replace_one(at(101), reading(sensor, start, 101), upsert=True)
    coll.replace_one(at(101), reading(sensor, start, 101, temperature=9.0), upsert=True)
    coll.find_one_and_update({"_id": ids[20]}, {"$set": {"temperature": 40.0}})
    coll.find_one_and_replace({"_id": ids[21]}, reading(sensor, start, 21, pressure=90000.0))
    coll.find_one_and_delete({"_id": ids[22]})
    coll.bulk_write(
        [
            InsertOne(reading(sensor, start, 60)),
            InsertOne(reading(sensor, start, 61)),
            UpdateOne({"_id": ids[23]}, {"$inc": {"humidity": -1}}),
            UpdateMany(between(30, 34), {"$set": {"batch": 2}}),
            ReplaceOne({"_id": ids[24]}, reading(sensor, start, 24, note="replaced in bulk")),
            ReplaceOne(at(102), reading(sensor, start, 102), upsert=True),
            UpdateOne(at(103), {"$set": {"temperature": 1.0}}, upsert=True),
            DeleteOne({"_id": ids[25]}),
            DeleteMany(between(36, 38)),
        ]
    )
    coll.delete_one({"_id": ids[26]})
    coll.delete_many(between(27, 29))
    coll.with_options(write_concern=WriteConcern(w=0)).insert_one(reading(sensor, start, 62))  # unacknowledged
    last_write_ms = time.time() * 1000
    deadline = time.monotonic() + 30
    while coll.count_documents(at(62)) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    count = coll.count_documents({"sensor_id": sensor})
    print(json_util.dumps({"driver": f"pymongo {pymongo.version}", "calls": 17, "count": count, "last_write_ms": last_write_ms}))
    client.close()


if __name__ == "__main__":
    if sys.argv[1] == "readings":
        readings(*sys.argv[2:7])
    else:
        main()
