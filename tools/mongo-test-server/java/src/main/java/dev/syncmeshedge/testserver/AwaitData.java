package dev.syncmeshedge.testserver;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import io.netty.channel.ChannelHandlerContext;

/**
 * A change stream {@code getMore} that would return nothing waits, as on MongoDB, until an event
 * of its stream is appended to the oplog or its {@code maxTimeMS} (the driver's {@code
 * maxAwaitTimeMS}; 1 s when absent, MongoDB's default) has passed, and then runs. The library
 * answered at once, so a client polled: the listener paused 10-250 ms between empty polls, which
 * was most of an insert's way to its subscribers.
 *
 * <p>Nothing blocks a network thread: the request is put aside and run later on its
 * connection's event loop ({@code ctx.executor()}), woken by {@link CappedOplog#onAppend} or by a
 * timer. A driver sends nothing else on a connection while a command on it is unanswered. A
 * wake-up registers again before it checks, so an entry appended between the check and the
 * registration still wakes it.
 */
final class AwaitData implements Runnable {

    /** MongoDB's wait for a getMore of an awaitData cursor without maxTimeMS. */
    static final long DEFAULT_WAIT_MS = 1_000;
    /** Longest wait honoured (a driver's socket timeout is usually shorter than anyone asks for). */
    static final long MAX_WAIT_MS = 60_000;

    private final CappedOplog oplog;
    private final ChannelHandlerContext ctx;
    private final MongoMessage message;
    private final long cursorId;
    private final Runnable answer;
    private final long deadlineNanos;
    /** Touched on the connection's event loop only. */
    private boolean done;
    private ScheduledFuture<?> timer;

    private AwaitData(CappedOplog oplog, ChannelHandlerContext ctx, MongoMessage message, long cursorId, long waitMs, Runnable answer) {
        this.oplog = oplog;
        this.ctx = ctx;
        this.message = message;
        this.cursorId = cursorId;
        this.answer = answer;
        this.deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
    }

    /**
     * Puts {@code message} aside when it is a getMore of a change stream with nothing to return,
     * and returns true; {@code answer} runs it later on the connection's event loop. False: run
     * it now.
     */
    static boolean deferred(CappedOplog oplog, ChannelHandlerContext ctx, MongoMessage message, Runnable answer) {
        if (oplog == null) {
            return false;
        }
        Document command = message.getDocument();
        if (command.isEmpty() || !"getMore".equals(command.keySet().iterator().next())
                || !(command.get("getMore") instanceof Number id)) {
            return false;
        }
        long waitMs = command.get("maxTimeMS") instanceof Number ms ? ms.longValue() : DEFAULT_WAIT_MS;
        if (waitMs <= 0 || !oplog.idle(id.longValue())) {
            return false;
        }
        waitMs = Math.min(waitMs, MAX_WAIT_MS);
        AwaitData waiting = new AwaitData(oplog, ctx, message, id.longValue(), waitMs, answer);
        oplog.onAppend(waiting);
        if (!oplog.idle(waiting.cursorId)) { // an entry came between the check and the registration
            oplog.forget(waiting);
            return false;
        }
        waiting.timer = ctx.executor().schedule(waiting::finish, waitMs, TimeUnit.MILLISECONDS);
        return true;
    }

    /** Woken by an appended entry (on the writer's thread): check on the connection's event loop. */
    @Override
    public void run() {
        ctx.executor().execute(this::check);
    }

    private void check() {
        if (done) {
            return;
        }
        if (!ctx.channel().isActive()) {
            done = true;
            timer.cancel(false);
            return;
        }
        oplog.onAppend(this);
        if (oplog.idle(cursorId) && System.nanoTime() < deadlineNanos) {
            return; // an entry of another collection: wait on
        }
        finish();
    }

    private void finish() {
        if (done) {
            return;
        }
        done = true;
        oplog.forget(this);
        if (timer != null) {
            timer.cancel(false);
        }
        if (ctx.channel().isActive()) {
            answer.run();
        }
    }

    @Override
    public String toString() {
        return "getMore of cursor " + cursorId + " on " + message.getChannel();
    }
}
