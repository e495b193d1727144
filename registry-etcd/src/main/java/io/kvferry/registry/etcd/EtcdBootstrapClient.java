package io.kvferry.registry.etcd;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.bootstrap.RegistryChange;
import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A {@link BootstrapClient} on etcd: prefill ranks register under leased keys that vanish when the rank dies, decode
 * ranks resolve instances from etcd and learn at once, from a watch, that a rank left or moved or that an instance's
 * sizes changed. The bootstrap address of the calls names the instance (decode ranks use the same address they would
 * give an HTTP bootstrap server); no HTTP server is involved.
 *
 * <pre>{@code
 * EtcdBootstrapClient registry = EtcdBootstrapClient.create("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379")
 *         .leaseTtl(Duration.ofSeconds(3));
 * PrefillKVManager prefill = KVManagerSpec.prefill()...bootstrapClient(registry)
 *         .bootstrapAddress(HostPort.parse("prefill-a:8998")).start().block();
 * ...
 * registry.dispose();
 * }</pre>
 *
 * <p><b>Keys.</b> See {@link RegistryKeys}: one {@code info} key per instance, fixed by its first registration as the
 * HTTP bootstrap server does (it is replaced only when no rank of the instance is registered any more, so a restarted
 * instance may change shape), and one key per rank (DP group, CP rank 0, TP rank, PP rank) holding
 * {@code {"rank_ip": .., "rank_port": ..}}.
 *
 * <p><b>Leases.</b> Each rank key is attached to a lease of its own with a TTL of {@link #leaseTtl(Duration)}
 * (default 3 s). The client renews it every third of the TTL while the process lives (so two renewals may be lost
 * before it ends); {@link #deregister} revokes it, deleting the key at once; a process that dies stops renewing and
 * etcd deletes the key within one TTL. A lease etcd ended anyway (the rank was cut off for longer than the TTL) is
 * granted anew and the key written again as soon as the client notices.
 *
 * <p><b>Changes.</b> {@link #changes()} watches every instance under the prefix: a deleted rank key is
 * {@link RegistryChange.Kind#RANK_REMOVED}, a rank key written with another endpoint
 * {@link RegistryChange.Kind#RANK_MOVED}, a changed or deleted {@code info} key
 * {@link RegistryChange.Kind#INSTANCE_CHANGED}. The watch reads every key once, then resumes after the last revision it
 * saw when etcd or the connection fails; when that history is gone (etcd compacted it, or lost its data and counts
 * revisions anew) it reads every key again and reports the difference (after one lease TTL when etcd lost its data,
 * so that the ranks still alive registered again), so no change is skipped.
 *
 * <p><b>Calls.</b> Lazy (nothing is sent before subscription), non-blocking, each bounded by {@link #timeout(Duration)}
 * (default 5 s). What etcd answers while a member is down or a leader is being elected ({@code UNAVAILABLE},
 * {@code etcdserver: request timed out}, {@code leader changed}), and a try left unanswered for 2 s, is tried again
 * within that timeout: every call is idempotent (a lease granted twice leaves one unused lease that expires by
 * itself). Failures are {@link BootstrapException}s naming the call and the etcd endpoints:
 * {@link BootstrapException.Kind#TIMEOUT} when no quorum answered in time, {@code UNREACHABLE} when no member
 * could be reached, {@code NOT_FOUND} for an unregistered rank (status 404), {@code NOT_READY} for an instance not
 * fully registered (503), {@code BAD_REQUEST} for a rank outside the instance's fixed sizes (400),
 * {@code UNAUTHORIZED} when etcd refused the user, its password or its permissions, and {@code OTHER} for a failed TLS
 * handshake (saying which side refused and why); those last two are not retried. Results are signalled on the etcd
 * client's event loop or on the timer thread: do not block downstream.
 *
 * <p><b>Security.</b> Plain {@code http://} with no user by default. {@link #tls(Path)} speaks TLS and trusts the
 * CA that signed etcd's certificate, {@link #tls(Path, Path, Path)} also presents a client certificate (etcd's
 * {@code --client-cert-auth}), {@link #credentials(String, String)} authenticates as an etcd user (etcd's
 * {@code auth enable}); the files are read, and their problems reported naming them, when the client is configured:
 * <pre>{@code
 * EtcdBootstrapClient registry = EtcdBootstrapClient.create("etcd://10.0.0.1:2379")
 *         .tls(Path.of("/etc/kvferry/etcd-ca.pem"), Path.of("/etc/kvferry/etcd-client.pem"),
 *                 Path.of("/etc/kvferry/etcd-client-key.pem"))
 *         .credentials("kvferry", System.getenv("KVFERRY_ETCD_PASSWORD"));
 * }</pre>
 *
 * <p><b>Configuration.</b> Immutable: every setter returns a new client and leaves this one as it was; a client owns
 * nothing (no connection, no thread) until its first call, and {@link #dispose()} releases what it opened; a jetcd
 * client given by {@link #client(Client)} stays the caller's.
 */
public final class EtcdBootstrapClient implements BootstrapClient, Disposable {

	/** Longest time one call may take. */
	public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

	/** How long a rank's key outlives its last renewal; renewals are sent every third of it. */
	public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(3);

	/** etcd refuses shorter leases (its minimum is 1.5 election timeouts, rounded up to whole seconds). */
	static final Duration MIN_LEASE_TTL = Duration.ofSeconds(2);

	/** Never mutated once this client holds it: {@link #with} edits a copy. */
	private final EtcdClientSettings settings;
	private final RegistryKeys keys;

	private final EtcdConnection connection;
	private final RankLeases leases;
	private final RankRegistrations registrations;
	private final Flux<RegistryChange> changes;

	private EtcdBootstrapClient(EtcdClientSettings settings) {
		this.settings = settings;
		this.keys = settings.keys;
		this.connection = new EtcdConnection(settings.endpoints, settings.timeout, settings.tls, settings.credentials,
				keys.prefix(), settings.client);
		this.leases = new RankLeases(settings.leaseTtl, connection::isDisposed, this::register);
		this.registrations = new RankRegistrations(connection, keys, leases);
		this.changes = RegistryWatch.changes(connection, keys, settings.leaseTtl).share();
	}

	/**
	 * @param endpoints etcd client endpoints: {@code etcd://host:port[,host:port...]}, or the same list without the
	 * scheme
	 * @return a client with the default timeout, lease TTL and key prefix; it owns nothing until its first call
	 * @throws IllegalArgumentException naming the part of {@code endpoints} that is not a {@code host:port}
	 */
	public static EtcdBootstrapClient create(String endpoints) {
		return create(parseEndpoints(endpoints));
	}

	/**
	 * @param endpoints etcd client endpoints (any member; the client fails over between them)
	 * @return a client with the default timeout, lease TTL and key prefix; it owns nothing until its first call
	 */
	public static EtcdBootstrapClient create(List<HostPort> endpoints) {
		Objects.requireNonNull(endpoints, "endpoints");
		if (endpoints.isEmpty()) {
			throw new IllegalArgumentException("endpoints : [] (expected: at least one etcd host:port)");
		}
		endpoints.forEach(e -> Objects.requireNonNull(e, "endpoints[i]"));
		return new EtcdBootstrapClient(new EtcdClientSettings(endpoints));
	}

	/**
	 * @param text {@code etcd://host:port[,host:port...]} or {@code host:port[,host:port...]}
	 * @return the endpoints, in order
	 * @throws IllegalArgumentException naming the part that is not a {@code host:port}
	 */
	public static List<HostPort> parseEndpoints(String text) {
		return EtcdClientSettings.parseEndpoints(text);
	}

	/**
	 * @param timeout the longest one call (including the client's own retries on another member) may take; default
	 * 5 s
	 * @return a new {@link EtcdBootstrapClient}
	 */
	public EtcdBootstrapClient timeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		if (timeout.isNegative() || timeout.isZero()) {
			throw new IllegalArgumentException("timeout : " + timeout + " (expected: > 0)");
		}
		return with(s -> s.timeout = timeout);
	}

	/**
	 * @param ttl how long a rank's key outlives its process: whole seconds, at least 2 s (etcd's minimum); renewals
	 * are sent every third of it. Default 3 s.
	 * @return a new {@link EtcdBootstrapClient}
	 */
	public EtcdBootstrapClient leaseTtl(Duration ttl) {
		Objects.requireNonNull(ttl, "ttl");
		if (ttl.compareTo(MIN_LEASE_TTL) < 0 || ttl.toMillis() % 1000 != 0) {
			throw new IllegalArgumentException("leaseTtl : " + ttl + " (expected: whole seconds, >= "
					+ MIN_LEASE_TTL.toSeconds() + " s, the shortest lease etcd grants)");
		}
		return with(s -> s.leaseTtl = ttl);
	}

	/**
	 * @param prefix the prefix of every key (default {@value RegistryKeys#DEFAULT_PREFIX}); fleets sharing one etcd
	 * cluster keep apart with different prefixes
	 * @return a new {@link EtcdBootstrapClient}
	 */
	public EtcdBootstrapClient prefix(String prefix) {
		RegistryKeys k = new RegistryKeys(prefix);
		return with(s -> s.keys = k);
	}

	/**
	 * Speaks TLS to etcd ({@code https://}) and trusts the server certificates that {@code caCertificate} signed; no
	 * client certificate is presented (etcd without {@code --client-cert-auth}). The certificate of every endpoint
	 * must name it (a SAN with the endpoint's host name or IP address). The file is read now.
	 *
	 * @param caCertificate PEM file of the CA certificate(s) etcd's certificate chains to (the file etcd's own
	 * clients get as {@code --cacert})
	 * @return a new {@link EtcdBootstrapClient}
	 * @throws IllegalArgumentException naming the file when it is missing, unreadable, holds no PEM certificate or an
	 * expired one
	 */
	public EtcdBootstrapClient tls(Path caCertificate) {
		EtcdTls tls = EtcdTls.fromFiles(caCertificate, null, null);
		return with(s -> s.tls = tls);
	}

	/**
	 * Speaks mutual TLS to etcd ({@code https://}): trusts the server certificates that {@code caCertificate}
	 * signed and presents {@code clientCertificate}, which etcd started with {@code --client-cert-auth} checks
	 * against its {@code --trusted-ca-file}. The files are read now; rotated files are read by a new client.
	 *
	 * @param caCertificate PEM file of the CA certificate(s) etcd's certificate chains to
	 * @param clientCertificate PEM file of this client's certificate (leaf first, then any intermediates)
	 * @param clientKey PEM file of its private key, unencrypted: PKCS#8 ({@code BEGIN PRIVATE KEY}) or OpenSSL's
	 * {@code BEGIN RSA PRIVATE KEY} / {@code BEGIN EC PRIVATE KEY}, as cfssl and openssl write them
	 * @return a new {@link EtcdBootstrapClient}
	 * @throws IllegalArgumentException naming the file when one is missing, unreadable or malformed, a certificate
	 * expired, or the key is not the client certificate's
	 */
	public EtcdBootstrapClient tls(Path caCertificate, Path clientCertificate, Path clientKey) {
		Objects.requireNonNull(clientCertificate, "clientCertificate");
		Objects.requireNonNull(clientKey, "clientKey");
		EtcdTls tls = EtcdTls.fromFiles(caCertificate, clientCertificate, clientKey);
		return with(s -> s.tls = tls);
	}

	/**
	 * Speaks TLS to etcd ({@code https://}) with a context of the caller's, for key material that is not in files.
	 *
	 * @param sslContext a client context that offers HTTP/2 through ALPN, as gRPC needs:
	 * {@code GrpcSslContexts.forClient().trustManager(..).keyManager(..).build()}
	 * @return a new {@link EtcdBootstrapClient}
	 * @throws IllegalArgumentException for a server context or one that does not offer {@code h2}
	 */
	public EtcdBootstrapClient tls(SslContext sslContext) {
		EtcdTls tls = EtcdTls.of(sslContext);
		return with(s -> s.tls = tls);
	}

	/**
	 * Authenticates to etcd (with {@code auth enable}) as {@code user}: jetcd trades the password for a token on the
	 * first call and again when etcd ends the token. Over plain {@code http://} the password crosses the network in
	 * clear: combine with {@link #tls(Path)}. The user's role needs read-write permission on the key prefix
	 * ({@link #prefix(String)}, {@code kvferry/} by default).
	 *
	 * @param user the etcd user
	 * @param password its password; kept by this client and never logged
	 * @return a new {@link EtcdBootstrapClient}
	 * @throws IllegalArgumentException when either is empty
	 */
	public EtcdBootstrapClient credentials(String user, String password) {
		Objects.requireNonNull(user, "user");
		Objects.requireNonNull(password, "password");
		if (user.isEmpty()) {
			throw new IllegalArgumentException("etcd user : empty (expected: an etcd user name)");
		}
		if (password.isEmpty()) {
			throw new IllegalArgumentException("etcd password of user '" + user + "' : empty (expected: the "
					+ "user's password)");
		}
		EtcdConnection.Credentials c = new EtcdConnection.Credentials(user, password.getBytes(StandardCharsets.UTF_8));
		return with(s -> s.credentials = c);
	}

	/**
	 * Runs every call on the caller's jetcd client instead of one this registry builds, so that one etcd connection
	 * (its gRPC channels and threads) serves several registries, or the application too. The caller owns it:
	 * {@link #dispose()} stops this registry's leases and calls but never closes the client. Its own endpoints, TLS
	 * and credentials apply ({@link #tls(Path)} and {@link #credentials} no longer do); the endpoints given to
	 * {@code create} name etcd in failure messages. For prompt failures build it as this registry builds its own:
	 * {@code waitForReady(false)}, {@code retryMaxAttempts(0)}.
	 *
	 * @param client a jetcd {@link Client}
	 * @return a new {@link EtcdBootstrapClient}
	 */
	public EtcdBootstrapClient client(Client client) {
		Objects.requireNonNull(client, "client");
		return with(s -> s.client = client);
	}

	/** @return the etcd endpoints */
	public List<HostPort> endpoints() {
		return settings.endpoints;
	}

	/** @return the lease TTL of rank keys */
	public Duration leaseTtl() {
		return settings.leaseTtl;
	}

	/** @return the key layout */
	public RegistryKeys keys() {
		return keys;
	}

	/** @return whether etcd is spoken to over TLS */
	public boolean isSecure() {
		return settings.tls != null;
	}

	/** @return the etcd user this client authenticates as, or null when it does not authenticate */
	public @Nullable String user() {
		return settings.credentials == null ? null : settings.credentials.user();
	}

	/**
	 * @return the endpoints with their scheme, the TLS material and the user (never the password), e.g.
	 * {@code EtcdBootstrapClient[https://10.0.0.1:2379] TLS (CA /etc/etcd/ca.pem, client certificate ...), user
	 * kvferry, prefix kvferry}
	 */
	@Override
	public String toString() {
		EtcdClientSettings s = settings;
		return "EtcdBootstrapClient" + connection.where() + (s.tls == null ? "" : " " + s.tls)
				+ (s.credentials == null ? "" : ", user " + s.credentials.user()) + ", prefix " + keys.prefix();
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Fixes the instance's sizes if this is its first registration (or no rank of it is registered), grants the
	 * rank a lease unless it holds one, and writes its key under it. Registering again with a held lease rewrites the
	 * key only. Not retried here: the etcd client already retries on another member within the timeout.
	 *
	 * @throws BootstrapException {@code BAD_REQUEST} when the rank lies outside the sizes the instance was fixed with
	 */
	@Override
	public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		Objects.requireNonNull(registration, "registration");
		return registrations.register(bootstrap, registration);
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Revokes the rank's lease, which deletes its key; when this client holds no lease for it (another process
	 * registered it), deletes the key only if it still holds this registration's endpoint.
	 */
	@Override
	public Mono<Void> deregister(HostPort bootstrap, PrefillRegistration registration) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		Objects.requireNonNull(registration, "registration");
		return registrations.deregister(bootstrap, registration);
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Reads the instance's {@code info} key and counts its rank keys in one consistent read.
	 */
	@Override
	public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		String call = "parallel info of " + bootstrap;
		return connection.bounded(call, client -> InstanceInfo.parallelInfo(client, keys, bootstrap, call,
				settings.endpoints));
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
		return rankRoute(bootstrap, dpGroup, 0, tpRank, ppRank).map(RankRoute::endpoint);
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Reads the rank key's endpoint and the incarnation stored with it; CP rank 0 only, as
	 * {@link #rankEndpoint(HostPort, int, int, int)}.
	 */
	@Override
	public Mono<RankRoute> rankRoute(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		if (cpRank != 0) {
			return BootstrapClient.super.rankRoute(bootstrap, dpGroup, cpRank, tpRank, ppRank);
		}
		Objects.requireNonNull(bootstrap, "bootstrap");
		checkRank("dpGroup", dpGroup);
		checkRank("tpRank", tpRank);
		checkRank("ppRank", ppRank);
		String call = "rank dp=" + dpGroup + " tp=" + tpRank + " pp=" + ppRank + " of " + bootstrap;
		String rankKey = keys.rank(bootstrap, dpGroup, 0, tpRank, ppRank);
		return connection.bounded(call, client -> future(() -> client.getKVClient().get(bytes(rankKey)))
				.handle((get, sink) -> {
					if (get.getKvs().isEmpty()) {
						sink.error(new BootstrapException(BootstrapException.Kind.NOT_FOUND, 404, call
								+ ": not registered in etcd " + settings.endpoints + " (no key " + rankKey + ")"));
						return;
					}
					sink.next(RegistryCodec.readRoute(call, get.getKvs().get(0)));
				}));
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Completes when a linearizable read is answered, that is when a quorum of etcd members is up.
	 */
	@Override
	public Mono<Void> health(HostPort bootstrap) {
		return connection.bounded("health", client -> future(() -> client.getKVClient().get(bytes(keys.instances()),
				GetOption.builder().withCountOnly(true).build())).then());
	}

	@Override
	public Flux<RegistryChange> changes() {
		return changes;
	}

	/**
	 * A watch of its own, as {@link #changes()} but not shared, telling {@code onWatching} each time etcd established
	 * it: for callers that must know from when on a change is reported.
	 */
	Flux<RegistryChange> changes(Runnable onWatching) {
		return RegistryWatch.changes(connection, keys, settings.leaseTtl, onWatching);
	}

	/**
	 * Runs a call of its own on this client's etcd connection, with this client's timeout, its retries of what passes
	 * by itself (so {@code body} must be idempotent) and its typed failures. For stores that share this registry's
	 * keys, as the bootstrap server's etcd store does.
	 *
	 * @param call what is asked, for failure messages
	 * @param body the call on jetcd's client; its future-returning methods go in {@link Mono#fromFuture(Supplier)}
	 * @return the call's result; lazy
	 */
	public <T> Mono<T> call(String call, Function<Client, Mono<T>> body) {
		Objects.requireNonNull(call, "call");
		Objects.requireNonNull(body, "body");
		return connection.bounded(call, body);
	}

	/**
	 * Stops renewing this client's leases and closes its etcd connection, without waiting. Keys of ranks not
	 * deregistered expire within the lease TTL. Later calls fail; idempotent, any thread.
	 */
	@Override
	public void dispose() {
		connection.dispose(leases::stopAll);
	}

	@Override
	public boolean isDisposed() {
		return connection.isDisposed();
	}

	/** @return a new client whose settings are a copy of these with {@code edit} applied; these stay as they were */
	private EtcdBootstrapClient with(Consumer<EtcdClientSettings> edit) {
		EtcdClientSettings copy = settings.copy();
		edit.accept(copy);
		return new EtcdBootstrapClient(copy);
	}

	private static <T> Mono<T> future(Supplier<CompletableFuture<T>> call) {
		return Mono.fromFuture(call);
	}

	private static ByteSequence bytes(String text) {
		return RegistryKeys.bytes(text);
	}

	private static void checkRank(String name, int rank) {
		if (rank < 0) {
			throw new IllegalArgumentException(name + " : " + rank + " (expected: >= 0)");
		}
	}
}
