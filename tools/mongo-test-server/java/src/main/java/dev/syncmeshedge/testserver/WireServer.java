package dev.syncmeshedge.testserver;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoThreadFactory;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.wire.MongoDatabaseHandler;
import de.bwaldvogel.mongo.wire.MongoExceptionHandler;
import de.bwaldvogel.mongo.wire.MongoWireMessageEncoder;
import de.bwaldvogel.mongo.wire.MongoWireProtocolHandler;
import de.bwaldvogel.mongo.wire.MongoWireReplyEncoder;
import de.bwaldvogel.mongo.wire.message.ClientRequest;
import de.bwaldvogel.mongo.wire.message.MessageHeader;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;

/**
 * The network side: mongo-java-server's {@code MongoServer} with three differences in how it reads
 * OP_MSG messages (the library's encoders, database handler and backend are used as they are).
 *
 * <ul>
 *   <li><b>A message it cannot read is answered with an error</b> (BadValue, naming what it could
 *       not read) instead of closing the connection. The library's BSON decoder knows binary
 *       subtypes 0, 3, 4 and 128 only and no code-with-scope, DBPointer or symbol; a pymongo
 *       {@code replace_one} with, say, an MD5 binary (subtype 5) or a vector (subtype 9) failed
 *       in the decoder, whose error closes the connection: the driver saw "connection closed"
 *       and never learnt why.</li>
 *   <li><b>Unacknowledged writes</b> ({@code w: 0}: the {@code moreToCome} flag) run and get no
 *       reply, as the protocol says; the library refused the flag and closed the connection, so
 *       the driver's next command on it failed with "connection closed". The
 *       {@code exhaustAllowed} flag is accepted and answered with an ordinary reply (a server may
 *       ignore it).</li>
 *   <li><b>A change stream {@code getMore} with nothing to return waits</b> for an event, up to its
 *       {@code maxTimeMS}, as on MongoDB ({@link AwaitData}); the library answered at once.</li>
 * </ul>
 */
final class WireServer {

    private static final Logger log = LoggerFactory.getLogger(WireServer.class);

    private static final int OP_MSG = 2013;
    private static final int MORE_TO_COME = 1 << 1;
    private static final int EXHAUST_ALLOWED = 1 << 16;
    /** Command name of the stand-in for a message that could not be read ({@link ObservedBackends}). */
    static final String UNREADABLE = "$unreadableMessage";
    private static final int BAD_VALUE_CODE = 2;

    private final MongoBackend backend;
    /** The oplog change stream getMores wait on ({@link AwaitData}); null: they answer at once. */
    private final CappedOplog oplog;
    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private ChannelGroup clients;
    private Channel listening;

    WireServer(MongoBackend backend) {
        this.backend = backend;
        this.oplog = backend instanceof ObservedBackends.WithOplog observed ? observed.cappedOplog() : null;
    }

    /** Listens on {@code host:port} (port 0: a free one); throws when it cannot. */
    InetSocketAddress bind(String host, int port) {
        boss = new NioEventLoopGroup(1, new MongoThreadFactory("mongo-server-boss"));
        workers = new NioEventLoopGroup(0, new MongoThreadFactory("mongo-server-worker"));
        clients = new DefaultChannelGroup("mongodb-channels", workers.next());
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 100)
                .localAddress(new InetSocketAddress(host, port))
                .childOption(ChannelOption.TCP_NODELAY, Boolean.TRUE)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    public void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new MongoWireReplyEncoder());
                        ch.pipeline().addLast(new MongoWireMessageEncoder());
                        ch.pipeline().addLast(new Decoder());
                        ch.pipeline().addLast(new Handler(backend, clients, oplog));
                        ch.pipeline().addLast(new MongoExceptionHandler());
                    }
                });
        try {
            listening = bootstrap.bind().syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            shutdown();
            throw e;
        }
        return (InetSocketAddress) listening.localAddress();
    }

    /** Stops listening, closes the clients' connections and the network threads. */
    void shutdown() {
        if (listening != null) {
            listening.close().syncUninterruptibly();
        }
        if (clients != null) {
            clients.close().syncUninterruptibly();
        }
        for (EventLoopGroup group : new EventLoopGroup[] {boss, workers}) {
            if (group != null) {
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
    }

    /** A message sent with moreToCome: run it, send nothing back. */
    private static final class Unacknowledged extends MongoMessage {
        Unacknowledged(MongoMessage message) {
            super(message.getChannel(), message.getHeader(), message.getDocument());
        }
    }

    private static final class Decoder extends MongoWireProtocolHandler {
        @Override
        protected ClientRequest decode(ChannelHandlerContext ctx, ByteBuf buf) throws Exception {
            int start = buf.readerIndex();
            if (buf.readableBytes() < 20) {
                return super.decode(ctx, buf); // not all there yet
            }
            int totalLength = buf.getIntLE(start);
            if (totalLength < 20 || totalLength > MAX_MESSAGE_SIZE_BYTES || buf.readableBytes() < totalLength
                    || buf.getIntLE(start + 12) != OP_MSG) {
                return super.decode(ctx, buf); // incomplete, too large, or not OP_MSG: the library decides
            }
            int flags = buf.getIntLE(start + 16);
            boolean unacknowledged = (flags & MORE_TO_COME) != 0;
            buf.setIntLE(start + 16, flags & ~(MORE_TO_COME | EXHAUST_ALLOWED));
            ClientRequest request;
            try {
                request = super.decode(ctx, buf);
            } catch (RuntimeException e) {
                // The whole message is consumed either way: the next one starts where it ends.
                buf.readerIndex(start + totalLength);
                String reason = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
                log.warn("cannot read a message from {}: {}", ctx.channel().remoteAddress(), reason);
                Document standIn = new Document(UNREADABLE, reason).append("$db", "admin");
                request = new MongoMessage(ctx.channel(), new MessageHeader(totalLength, buf.getIntLE(start + 4), 0), standIn);
            }
            return unacknowledged && request instanceof MongoMessage message ? new Unacknowledged(message) : request;
        }
    }

    /** The error for the stand-in of a message that could not be read. */
    static MongoServerError unreadable(Object reason) {
        return new MongoServerError(BAD_VALUE_CODE, "BadValue", "the test server (mongo-java-server) cannot read this message: " + reason
                + ". It reads every BSON type but code with scope, DBPointer and symbol, and binary subtypes 0, 3, 4 and 128"
                + " only; MongoDB accepts them all");
    }

    private static final class Handler extends MongoDatabaseHandler {
        private final MongoBackend backend;
        private final CappedOplog oplog;

        Handler(MongoBackend backend, ChannelGroup clients, CappedOplog oplog) {
            super(backend, clients);
            this.backend = backend;
            this.oplog = oplog;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ClientRequest request) {
            if (request instanceof Unacknowledged message) {
                try {
                    backend.handleMessage(message);
                } catch (RuntimeException e) {
                    log.warn("unacknowledged {} failed: {}", message.getDocument().keySet().iterator().next(), e.getMessage());
                }
                return;
            }
            if (request instanceof MongoMessage message && AwaitData.deferred(oplog, ctx, message, () -> answer(ctx, request))) {
                return; // answered once an event of its stream is there, or its maxTimeMS passed
            }
            super.channelRead0(ctx, request);
        }

        private void answer(ChannelHandlerContext ctx, ClientRequest request) {
            try {
                super.channelRead0(ctx, request);
            } catch (RuntimeException e) {
                ctx.fireExceptionCaught(e);
            }
        }
    }
}
