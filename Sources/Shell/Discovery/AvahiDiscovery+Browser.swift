internal import CAvahi

/// Browsing for service types and resolving what is found. Runs on Avahi's thread.
extension AvahiDiscovery {
    /// Creates the browser for `type` on every interface.
    func startBrowser(type: String, family: AddressFamily) {
        guard clientRunning, let client else {
            return
        }
        // Browse over IPv4 mDNS unless IPv6 addresses were asked for: one report per interface.
        let browseProtocol = family == .ipv6 ? AVAHI_PROTO_INET6 : AVAHI_PROTO_INET
        let browser = type.withCString { cType in
            avahi_service_browser_new(
                client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(browseProtocol),
                cType, nil, AvahiLookupFlags(0), serviceBrowserCallback, userdata)
        }
        guard let browser else {
            emit(.browseFailed(reason: "browsing \(type): \(avahiErrorText(avahi_client_errno(client)))"))
            return
        }
        browsers[type] = browser
    }

    /// AvahiServiceBrowserCallback. `name`, `type` and `domain` are copied before anything else.
    func browserEvent(
        _ browser: OpaquePointer, interface: AvahiIfIndex, protocol family: AvahiProtocol,
        event: AvahiBrowserEvent, name: String?, type: String?, domain: String?
    ) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let name, let type, let domain, client != nil else {
                return
            }
            let key = ServiceKey(
                interfaceIndex: interface, protocolFamily: family, name: name,
                type: type, domain: domain)
            services.appeared(key)
            startResolver(for: key)
        case AVAHI_BROWSER_REMOVE:
            guard let name, let type, let domain else {
                return
            }
            let key = ServiceKey(
                interfaceIndex: interface, protocolFamily: family, name: name,
                type: type, domain: domain)
            if let resolver = resolvers.removeValue(forKey: key) {
                avahi_service_resolver_free(resolver)
            }
            if let lost = services.disappeared(key) {
                emit(.serviceLost(name: lost.name, type: lost.type, domain: lost.domain))
            }
        case AVAHI_BROWSER_FAILURE:
            let browsedType = browsers.first(where: { $0.value == browser })?.key ?? type ?? "?"
            browsers[browsedType] = nil
            let error = avahi_client_errno(avahi_service_browser_get_client(browser))
            avahi_service_browser_free(browser)
            emit(.browseFailed(reason: "browsing \(browsedType): \(avahiErrorText(error))"))
        default:
            // AVAHI_BROWSER_CACHE_EXHAUSTED, AVAHI_BROWSER_ALL_FOR_NOW: nothing to report.
            break
        }
    }

    /// (Re)starts the resolver of `key`, replacing an open one.
    ///
    /// The resolver stays open while the service is present: Avahi reports it again when the
    /// SRV, TXT or address records change (a master restarted on another port), and it is
    /// freed on REMOVE, on failure, or with the client.
    func startResolver(for key: ServiceKey) {
        guard let client else { return }
        if let old = resolvers.removeValue(forKey: key) {
            freshResolvers.remove(old)
            avahi_service_resolver_free(old)
        }
        let resolver = key.name.withCString { cName in
            key.type.withCString { cType in
                key.domain.withCString { cDomain in
                    avahi_service_resolver_new(
                        client, key.interfaceIndex, key.protocolFamily, cName, cType, cDomain,
                        resolveProtocol(for: key.type), AvahiLookupFlags(0),
                        serviceResolverCallback, userdata)
                }
            }
        }
        if let resolver {
            resolvers[key] = resolver
            freshResolvers.insert(resolver)
        }
    }

    /// AvahiServiceResolverCallback, with the C data already copied out.
    func resolverEvent(_ resolver: OpaquePointer, event: AvahiResolverEvent, service: ResolvedService?) {
        guard let key = resolvers.first(where: { $0.value == resolver })?.key else {
            return
        }
        switch event {
        case AVAHI_RESOLVER_FOUND:
            guard let service else {
                return
            }
            let isFirstAnswer = freshResolvers.remove(resolver) != nil
            if !isFirstAnswer, let previous = services.resolution(for: key), previous.hostName != service.hostName {
                // The instance moved to another host. An open resolver follows the new SRV
                // record but keeps the old host's address record, so it would pair the new port
                // with the old address: resolve afresh instead of reporting that.
                startResolver(for: key)
                return
            }
            if services.resolved(key, as: service) {
                emit(.serviceFound(service))
            }
        default:
            // AVAHI_RESOLVER_FAILURE: a timeout or an unreachable host. The browser still
            // lists the service; it is resolved again if it is announced again.
            resolvers[key] = nil
            freshResolvers.remove(resolver)
            avahi_service_resolver_free(resolver)
        }
    }

    private func resolveProtocol(for type: String) -> AvahiProtocol {
        let family = browseTypes.first(where: { $0.type == type })?.family ?? .ipv4
        switch family {
        case .ipv4:
            return AvahiProtocol(AVAHI_PROTO_INET)
        case .ipv6:
            return AvahiProtocol(AVAHI_PROTO_INET6)
        case .any:
            return AvahiProtocol(AVAHI_PROTO_UNSPEC)
        }
    }
}
