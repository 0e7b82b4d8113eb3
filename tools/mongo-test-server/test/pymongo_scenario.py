"""Every kind of write pymongo can make, the reads a node needs, and a change stream that sees them.

Run by test/drivers.test.ts with the newest pymongo (src/pymongo.ts installs it into a venv):

    python pymongo_scenario.py MONGODB_URI DATABASE COLLECTION

It prints one JSON document (relaxed Extended JSON) with the change events, the reads and what
resuming a stream returned; the test compares them with what MongoDB produces, the same
expectations as for the Node driver's run of the same scenario.
"""

import sys
import time

import pymongo
from bson import json_util
from pymongo import DeleteOne, InsertOne, MongoClient, ReplaceOne, UpdateOne, WriteConcern


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


if __name__ == "__main__":
    main()
